// InferenceTest.java — outputs of the Java binding against numpy references, for every way to make a tensor.
package org.oneflow.test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.oneflow.DType;
import org.oneflow.Env;
import org.oneflow.Graph;
import org.oneflow.OneFlow;
import org.oneflow.Outputs;
import org.oneflow.Session;
import org.oneflow.SessionOptions;
import org.oneflow.Tensor;
import org.oneflow.ValueInfo;

class InferenceTest {
  static Session mainSession() {
    return Session.load(Fixtures.capi("model.onnx"), null);
  }

  /** Runs model.onnx on the batch-N fixture inputs and checks y and z against numpy. */
  static void checkMainModel(Session s, int batch) {
    try (Tensor x = Tensor.fromArray(Fixtures.floats(Fixtures.capi("x" + batch + ".f32")), batch, 4);
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b" + batch + ".f32")), batch, 4);
        Outputs out = s.run(Map.of("x", x, "b", b))) {
      assertEquals(List.of("y", "z:0/out"), out.names());
      assertArrayEquals(new long[] {batch, 4}, out.get("y").shape());
      assertArrayEquals(Fixtures.floats(Fixtures.capi("y" + batch + ".f32")), out.get("y").toFloatArray(), 1e-6f);
      assertArrayEquals(Fixtures.floats(Fixtures.capi("z" + batch + ".f32")), out.get(1).toFloatArray(), 1e-6f);
    }
  }

  @Test
  void versions() {
    assertFalse(OneFlow.version().isEmpty());
    assertTrue(OneFlow.apiVersion() >= 1);
    assertEquals("float32", DType.FLOAT32.engineName());
    assertEquals(8, DType.FLOAT64.byteSize());
    assertEquals(2, DType.BFLOAT16.byteSize());
    assertEquals(1, DType.INT4.byteSize());  // the narrow types: one byte per element in tensors
    assertEquals("float8e4m3fn", DType.FLOAT8E4M3FN.engineName());
    assertEquals(DType.INT2, DType.of(26));
  }

  @Test
  void runMatchesNumpyForSeveralBatchSizes() {
    try (Session s = mainSession()) {
      checkMainModel(s, 3);
      checkMainModel(s, 3);
      checkMainModel(s, 5);
      // Fused, Relu(x + b) + x is one FusedElementwise writing the output: no arena. Unfused, the
      // intermediates live in it.
      assertEquals(0, s.plannedPeakBytes());
    }
    try (Graph g = Graph.load(Fixtures.capi("model.onnx"));
        Session s = new Session(g, new SessionOptions().optimizationLevel(1))) {
      checkMainModel(s, 5);
      assertTrue(s.plannedPeakBytes() > 0);
    }
  }

  @Test
  void selectedOutputsComeInTheRequestedOrder() {
    try (Session s = mainSession();
        Tensor x = Tensor.fromArray(Fixtures.floats(Fixtures.capi("x3.f32")), 3, 4);
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4);
        Outputs out = s.run(Map.of("x", x, "b", b), "z:0/out", "y")) {
      assertEquals(List.of("z:0/out", "y"), out.names());
      assertArrayEquals(Fixtures.floats(Fixtures.capi("z3.f32")), out.get(0).toFloatArray(), 1e-6f);
      assertArrayEquals(Fixtures.floats(Fixtures.capi("y3.f32")), out.get("y").toFloatArray(), 1e-6f);
    }
  }

  @Test
  void inputAndOutputDescriptions() {
    try (Graph g = Graph.load(Fixtures.capi("model.onnx"))) {
      List<ValueInfo> in = g.inputs();
      assertEquals(2, in.size());
      ValueInfo x = in.get(0);
      assertEquals("x", x.name());
      assertEquals(DType.FLOAT32, x.dtype());
      assertArrayEquals(new long[] {-1, 4}, x.dims());
      assertEquals("batch", x.dimNames()[0]);
      assertNull(x.dimNames()[1]);
      assertEquals("z:0/out", g.outputs().get(1).name());
      try (Session s = new Session(g, null)) {
        assertEquals(g.inputs(), s.inputs());
        assertEquals(g.outputs(), s.outputs());
      }
    }
  }

  @Test
  void initializersAndExternalData() {
    float[] xc = Fixtures.floats(Fixtures.capi("xc.f32"));
    float[] yc = Fixtures.floats(Fixtures.capi("yc.f32"));
    for (String model : new String[] {"const_model.onnx", "ext/model.onnx"}) {
      try (Session s = Session.load(Fixtures.capi(model), null);
          Tensor x = Tensor.fromArray(xc, 2, 3);
          Outputs out = s.run(Map.of("x", x))) {
        assertArrayEquals(yc, out.get("y").toFloatArray(), 1e-6f, model);
      }
    }
    byte[] bytes = Fixtures.bytes(Fixtures.capi("ext/model.onnx"));
    try (Session s = Session.fromBytes(bytes, Fixtures.capi("ext"), null);
        Tensor x = Tensor.fromArray(xc, 2, 3);
        Outputs out = s.run(Map.of("x", x))) {
      assertArrayEquals(yc, out.get("y").toFloatArray(), 1e-6f);
    }
  }

  @Test
  void sessionOptionsAndEnvGiveTheSameAnswers() {
    try (Env env = new Env();
        Graph g = Graph.load(Fixtures.capi("model.onnx"));
        Session s0 = new Session(g, new SessionOptions().env(env).intraOpThreads(1).optimizationLevel(0));
        Session s1 = new Session(g, new SessionOptions().optimizationLevel(1))) {
      env.close(); // sessions keep what they need of the env
      checkMainModel(s0, 5);
      checkMainModel(s1, 3);
    }
  }

  /** A direct buffer is viewed, not copied: data written after the tensor exists is what the run reads. */
  @Test
  void borrowedDirectBufferIsZeroCopy() {
    float[] x3 = Fixtures.floats(Fixtures.capi("x3.f32"));
    ByteBuffer buf = ByteBuffer.allocateDirect(16 + x3.length * 4).order(ByteOrder.nativeOrder());
    buf.position(16); // the tensor starts at the position
    try (Session s = mainSession();
        Tensor x = Tensor.fromBuffer(DType.FLOAT32, buf, 3, 4);
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4)) {
      assertTrue(x.isBorrowed());
      buf.duplicate().order(ByteOrder.nativeOrder()).asFloatBuffer().put(x3);
      try (Outputs out = s.run(Map.of("x", x, "b", b))) {
        assertArrayEquals(Fixtures.floats(Fixtures.capi("y3.f32")), out.get("y").toFloatArray(), 1e-6f);
      }
      assertArrayEquals(x3, x.toFloatArray()); // reads see the buffer too
    }
  }

  /** The engine keeps a borrowed buffer reachable: dropping every Java reference and collecting is safe. */
  @Test
  void borrowedBufferSurvivesGarbageCollection() throws InterruptedException {
    float[] x3 = Fixtures.floats(Fixtures.capi("x3.f32"));
    Tensor x = borrowedCopy(x3);
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(10);
    }
    try (Session s = mainSession();
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4);
        Outputs out = s.run(Map.of("x", x, "b", b))) {
      assertArrayEquals(Fixtures.floats(Fixtures.capi("y3.f32")), out.get("y").toFloatArray(), 1e-6f);
    } finally {
      x.close();
    }
  }

  private static Tensor borrowedCopy(float[] data) {
    ByteBuffer buf = ByteBuffer.allocateDirect(data.length * 4).order(ByteOrder.nativeOrder());
    buf.asFloatBuffer().put(data);
    return Tensor.fromBuffer(DType.FLOAT32, buf, 3, 4);
  }

  /** Every Java array type (and raw bytes for types Java lacks) against numpy, in and out. */
  @Test
  void everyDtypeCrossesIntact() {
    Map<String, Tensor> in = new LinkedHashMap<>();
    try (Session s = Session.load(Fixtures.dtypes("dtypes.onnx"), null)) {
      in.put("d", Tensor.fromArray(Fixtures.doubles(Fixtures.dtypes("d.bin")), 3));
      in.put("i", Tensor.fromArray(Fixtures.ints(Fixtures.dtypes("i.bin")), 2, 2));
      in.put("l", Tensor.fromArray(Fixtures.longs(Fixtures.dtypes("l.bin")), 4));
      in.put("s", Tensor.fromArray(Fixtures.shorts(Fixtures.dtypes("s.bin")), 2));
      in.put("b", Tensor.fromArray(Fixtures.bytes(Fixtures.dtypes("b.bin")), 3));
      in.put("u", Tensor.fromBytes(DType.UINT8, Fixtures.bytes(Fixtures.dtypes("u.bin")), 3));
      in.put("hf", Tensor.fromBytes(DType.FLOAT16, Fixtures.bytes(Fixtures.dtypes("hf.bin")), 3));
      in.put("m", Tensor.fromArray(Fixtures.booleans(Fixtures.dtypes("m.bin")), 4));
      in.put("f", Tensor.fromArray(Fixtures.floats(Fixtures.dtypes("f.bin")), 2, 2));
      assertEquals(DType.INT16, in.get("s").dtype());
      assertEquals(DType.INT8, in.get("b").dtype());
      try (Outputs out = s.run(in)) {
        assertArrayEquals(Fixtures.doubles(Fixtures.dtypes("d2.bin")), out.get("d2").toDoubleArray(), 1e-12);
        assertArrayEquals(Fixtures.ints(Fixtures.dtypes("i2.bin")), out.get("i2").toIntArray());
        assertArrayEquals(new long[] {2, 2}, out.get("i2").shape());
        assertArrayEquals(Fixtures.longs(Fixtures.dtypes("l2.bin")), out.get("l2").toLongArray());
        assertArrayEquals(Fixtures.shorts(Fixtures.dtypes("s2.bin")), out.get("s2").toShortArray());
        assertArrayEquals(Fixtures.bytes(Fixtures.dtypes("b2.bin")), out.get("b2").toByteArray());
        assertArrayEquals(Fixtures.bytes(Fixtures.dtypes("u2.bin")), out.get("u2").toByteArray());
        assertEquals(DType.UINT8, out.get("u2").dtype());
        assertArrayEquals(Fixtures.shorts(Fixtures.dtypes("hf2.bin")), out.get("hf2").toShortArray());
        assertEquals(DType.FLOAT16, out.get("hf2").dtype());
        assertArrayEquals(Fixtures.booleans(Fixtures.dtypes("mn.bin")), out.get("mn").toBooleanArray());
        assertArrayEquals(Fixtures.booleans(Fixtures.dtypes("fp.bin")), out.get("fp").toBooleanArray());
        // Raw bytes, any dtype: a direct native-order buffer, and copies into heap and direct buffers.
        ByteBuffer raw = out.get("l2").toByteBuffer();
        assertTrue(raw.isDirect());
        assertEquals(ByteOrder.nativeOrder(), raw.order());
        byte[] got = new byte[raw.remaining()];
        raw.get(got);
        assertArrayEquals(Fixtures.bytes(Fixtures.dtypes("l2.bin")), got);
        for (ByteBuffer dst : new ByteBuffer[] {ByteBuffer.allocate(40), ByteBuffer.allocateDirect(40)}) {
          dst.position(3);
          out.get("i2").copyTo(dst);
          assertEquals(3 + 16, dst.position());
          byte[] copied = new byte[16];
          dst.position(3);
          dst.get(copied);
          assertArrayEquals(Fixtures.bytes(Fixtures.dtypes("i2.bin")), copied);
        }
      }
    } finally {
      in.values().forEach(Tensor::close);
    }
  }

  @Test
  void tensorMetadata() {
    try (Tensor t = Tensor.zeros(DType.INT64, 2, 0, 5);
        Tensor scalar = Tensor.fromArray(new double[] {2.5});
        Tensor v = Tensor.fromArray(new int[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
      assertArrayEquals(new long[] {2, 0, 5}, t.shape());
      assertEquals(0, t.elementCount());
      assertEquals(0, t.toLongArray().length);
      assertEquals(0, scalar.shape().length);
      assertEquals(1, scalar.elementCount());
      assertArrayEquals(new double[] {2.5}, scalar.toDoubleArray());
      assertEquals(DType.INT32, v.dtype());
      assertEquals(24, v.byteSize());
      assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6}, v.toIntArray());
      assertEquals("Tensor(INT32[2, 3])", v.toString());
    }
  }

  /** Sequences and optionals: a sequence in (concatenated, counted, returned as is), an empty and a present optional. */
  @Test
  void sequencesAndOptionals() {
    try (Session s = Session.load(Fixtures.capi("sequence_model.onnx"), null);
        Tensor a = Tensor.fromArray(new float[] {1.5f, -2f}, 2);
        Tensor b = Tensor.fromArray(new float[] {4.25f}, 1);
        Tensor seq = Tensor.sequence(DType.FLOAT32, a, b);
        Tensor none = Tensor.none(DType.FLOAT32)) {
      assertEquals(ValueInfo.Kind.SEQUENCE, s.inputs().get(0).kind());
      assertEquals(ValueInfo.Kind.OPTIONAL, s.inputs().get(1).kind());
      assertEquals(Tensor.Kind.SEQUENCE, seq.kind());
      assertEquals(2, seq.sequenceLength());
      assertEquals(Tensor.Kind.NONE, none.kind());
      assertEquals(Tensor.Kind.TENSOR, a.kind());
      for (Tensor opt : new Tensor[] {none, b}) {
        try (Outputs out = s.run(Map.of("s", seq, "o", opt))) {
          assertArrayEquals(new float[] {1.5f, -2f, 4.25f}, out.get("cat").toFloatArray(), 0f);
          assertArrayEquals(new long[] {2}, out.get("n").toLongArray());
          assertEquals(opt == b, out.get("has").toBooleanArray()[0]);
          Tensor same = out.get("same");
          assertEquals(Tensor.Kind.SEQUENCE, same.kind());
          assertEquals(2, same.sequenceLength());
          try (Tensor second = same.element(1)) {
            assertArrayEquals(new float[] {4.25f}, second.toFloatArray(), 0f);
          }
        }
      }
      ErrorTest.expect(org.oneflow.StatusCode.INVALID_ARGUMENT, "expects seq(", () -> s.run(Map.of("s", a, "o", none)));
      ErrorTest.expect(org.oneflow.StatusCode.INVALID_ARGUMENT, "out of range", () -> seq.element(2));
    }
  }

  /** String tensors: string_model.onnx (make_c_api_fixture.py) against values worked out here. */
  @Test
  void stringTensors() {
    String[] text = {"Hello there", "a", "b  c d ", "", "h\u00e9llo w\u00f6rld"};
    try (Session s = Session.load(Fixtures.capi("string_model.onnx"), null);
        Tensor in = Tensor.fromStrings(text, text.length)) {
      assertEquals(DType.STRING, in.dtype());
      assertArrayEquals(text, in.toStringArray());
      try (Outputs out = s.run(Map.of("text", in))) {
        String[] shout = new String[text.length];
        long[] words = new long[text.length];
        boolean[] greeting = new boolean[text.length];
        long[] ids = new long[text.length];
        for (int i = 0; i < text.length; ++i) {
          shout[i] = text[i] + "!";
          words[i] = java.util.Arrays.stream(text[i].trim().split(" +")).filter(w -> !w.isEmpty()).count();
          greeting[i] = text[i].toLowerCase().startsWith("hello");
          ids[i] = text[i].equals("a") ? 1 : text[i].equals("b") ? 2 : -1;
        }
        assertArrayEquals(shout, out.get("shout").toStringArray());
        assertArrayEquals(words, out.get("words").toLongArray());
        assertArrayEquals(greeting, out.get("greeting").toBooleanArray());
        assertArrayEquals(ids, out.get("id").toLongArray());
      }
      byte[][] raw = {{(byte) 0xff, 0, 1}, {}};
      try (Tensor b = Tensor.fromByteStrings(raw, 2)) {
        byte[][] back = b.toByteStrings();
        assertArrayEquals(raw[0], back[0]);
        assertArrayEquals(raw[1], back[1]);
      }
      try (Tensor f = Tensor.fromArray(new float[] {1f}, 1)) {
        ErrorTest.expect(org.oneflow.StatusCode.INVALID_ARGUMENT, "expects string", () -> s.run(Map.of("text", f)));
      }
    }
  }
}
