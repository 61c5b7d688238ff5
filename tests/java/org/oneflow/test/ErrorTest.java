// ErrorTest.java — engine statuses become OneflowException with the right code and the engine's message;
// misuse the binding detects itself becomes the matching JDK exception.
package org.oneflow.test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.NoSuchElementException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.oneflow.DType;
import org.oneflow.Graph;
import org.oneflow.OneflowException;
import org.oneflow.Outputs;
import org.oneflow.Session;
import org.oneflow.StatusCode;
import org.oneflow.Tensor;

class ErrorTest {
  /** Asserts that {@code call} throws OneflowException with {@code code} and a message containing {@code needle}. */
  static OneflowException expect(StatusCode code, String needle, Executable call) {
    OneflowException e = assertThrows(OneflowException.class, call);
    assertEquals(code, e.code(), e.getMessage());
    assertTrue(e.engineMessage().contains(needle), "'" + e.engineMessage() + "' should mention '" + needle + "'");
    assertTrue(e.getMessage().startsWith(code.name() + ": "), e.getMessage());
    return e;
  }

  @Test
  void badModels() {
    Path missing = Fixtures.capi("does/not/exist.onnx");
    expect(StatusCode.NOT_FOUND, "exist.onnx", () -> Graph.load(missing));
    expect(StatusCode.NOT_FOUND, "exist.onnx", () -> Session.load(missing, null));
    expect(StatusCode.INVALID_MODEL, "empty", () -> Graph.load(Fixtures.capi("empty.onnx")));
    expect(StatusCode.INVALID_MODEL, "not a valid ONNX model", () -> Graph.fromBytes("not an onnx model".getBytes()));
    expect(StatusCode.INVALID_MODEL, "escapes the model's directory", () -> Graph.load(Fixtures.capi("escape/model.onnx")));
    expect(StatusCode.INVALID_ARGUMENT, "external data",
        () -> Graph.fromBytes(Fixtures.bytes(Fixtures.capi("ext/model.onnx"))));
    expect(StatusCode.UNSUPPORTED, "FrobnicateOp", () -> Session.load(Fixtures.capi("unknown_op.onnx"), null));
    expect(StatusCode.UNSUPPORTED, "opset 29", () -> Session.load(Fixtures.capi("opset29.onnx"), null));
  }

  @Test
  void badInputs() {
    try (Session s = InferenceTest.mainSession();
        Tensor x = Tensor.fromArray(Fixtures.floats(Fixtures.capi("x3.f32")), 3, 4);
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4);
        Tensor x64 = Tensor.zeros(DType.FLOAT64, 3, 4);
        Tensor wrongDim = Tensor.zeros(DType.FLOAT32, 3, 5);
        Tensor wrongRank = Tensor.zeros(DType.FLOAT32, 3, 4, 1);
        Tensor otherBatch = Tensor.zeros(DType.FLOAT32, 2, 4)) {
      expect(StatusCode.NOT_FOUND, "'nope'", () -> s.run(Map.of("x", x, "nope", b)));
      expect(StatusCode.INVALID_ARGUMENT, "'b' is missing", () -> s.run(Map.of("x", x)));
      expect(StatusCode.INVALID_ARGUMENT, "dtype float64", () -> s.run(Map.of("x", x64, "b", b)));
      expect(StatusCode.INVALID_ARGUMENT, "dim 1", () -> s.run(Map.of("x", wrongDim, "b", b)));
      expect(StatusCode.INVALID_ARGUMENT, "rank 3", () -> s.run(Map.of("x", wrongRank, "b", b)));
      expect(StatusCode.INVALID_ARGUMENT, "batch", () -> s.run(Map.of("x", otherBatch, "b", b)));
      expect(StatusCode.NOT_FOUND, "nope", () -> s.run(Map.of("x", x, "b", b), "nope"));
      assertThrows(IllegalArgumentException.class, () -> s.run(Map.of("x\0y", x, "b", b)));
      try (Outputs out = s.run(Map.of("x", x, "b", b), "y")) { // the session still works after errors
        assertThrows(NoSuchElementException.class, () -> out.get("z:0/out"));
        assertEquals(1, out.size());
      }
    }
  }

  @Test
  void badTensors() {
    expect(StatusCode.INVALID_ARGUMENT, "dtype", () -> Tensor.zeros(DType.UNDEFINED, 2));
    assertThrows(OneflowException.class, () -> Tensor.zeros(DType.FLOAT32, 2, -1));
    assertThrows(IllegalArgumentException.class, () -> Tensor.fromArray(new float[5], 2, 3));
    assertThrows(IllegalArgumentException.class, () -> Tensor.fromBytes(DType.INT32, new byte[7], 2));
    assertThrows(IllegalArgumentException.class, () -> Tensor.fromBuffer(DType.FLOAT32, ByteBuffer.allocate(64), 4));
    expect(StatusCode.INVALID_ARGUMENT, "too small", () -> Tensor.fromBuffer(DType.FLOAT32, ByteBuffer.allocateDirect(15), 4));
    try (Tensor t = Tensor.fromArray(new long[] {1, 2}, 2)) {
      IllegalStateException e = assertThrows(IllegalStateException.class, t::toFloatArray);
      assertTrue(e.getMessage().contains("INT64"), e.getMessage());
      assertThrows(IllegalStateException.class, t::toBooleanArray);
      assertThrows(java.nio.BufferOverflowException.class, () -> t.copyTo(ByteBuffer.allocateDirect(15)));
    }
  }
}
