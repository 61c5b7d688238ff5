// LifecycleTest.java — closed handles throw IllegalStateException (never crash); close is idempotent;
// objects a session was made from may be closed before it.
package org.oneflow.test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.oneflow.DType;
import org.oneflow.Env;
import org.oneflow.Graph;
import org.oneflow.Outputs;
import org.oneflow.Session;
import org.oneflow.SessionOptions;
import org.oneflow.Tensor;

class LifecycleTest {
  @Test
  void closedTensorThrows() {
    Tensor t = Tensor.fromArray(new float[] {1, 2}, 2);
    assertFalse(t.isClosed());
    t.close();
    assertTrue(t.isClosed());
    t.close(); // idempotent
    assertThrows(IllegalStateException.class, t::shape);
    assertThrows(IllegalStateException.class, t::dtype);
    assertThrows(IllegalStateException.class, t::toFloatArray);
    assertThrows(IllegalStateException.class, t::toByteBuffer);
    assertThrows(IllegalStateException.class, () -> t.copyTo(ByteBuffer.allocateDirect(8)));
    Tensor borrowed = Tensor.fromBuffer(DType.INT8, ByteBuffer.allocateDirect(4), 4);
    borrowed.close();
    assertThrows(IllegalStateException.class, borrowed::toByteArray);
  }

  @Test
  void closedSessionGraphAndInputsThrow() {
    Graph g = Graph.load(Fixtures.capi("model.onnx"));
    Session s = new Session(g, null);
    g.close();
    assertThrows(IllegalStateException.class, g::inputs);
    assertThrows(IllegalStateException.class, () -> new Session(g, null));
    try (Tensor x = Tensor.fromArray(Fixtures.floats(Fixtures.capi("x3.f32")), 3, 4)) {
      Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4);
      InferenceTest.checkMainModel(s, 3); // the session outlives its graph
      b.close();
      assertThrows(IllegalStateException.class, () -> s.run(Map.of("x", x, "b", b)));
      s.close();
      s.close();
      assertThrows(IllegalStateException.class, () -> s.run(Map.of("x", x)));
      assertThrows(IllegalStateException.class, s::plannedPeakBytes);
      assertFalse(x.isClosed()); // a failed run leaves inputs alone
    }
  }

  @Test
  void closedEnvThrowsOnlyForNewSessions() {
    Env env = new Env();
    env.close();
    try (Graph g = Graph.load(Fixtures.capi("model.onnx"))) {
      assertThrows(IllegalStateException.class, () -> new Session(g, new SessionOptions().env(env)));
    }
  }

  @Test
  void outputsCloseTheirTensors() {
    Tensor y;
    try (Session s = InferenceTest.mainSession();
        Tensor x = Tensor.fromArray(Fixtures.floats(Fixtures.capi("x3.f32")), 3, 4);
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4);
        Outputs out = s.run(Map.of("x", x, "b", b))) {
      y = out.get("y");
      s.close(); // outputs never alias engine memory: they outlive the session
      assertArrayEquals(Fixtures.floats(Fixtures.capi("y3.f32")), y.toFloatArray(), 1e-6f);
    }
    assertTrue(y.isClosed());
    assertThrows(IllegalStateException.class, y::toFloatArray);
  }

  /**
   * A borrowed buffer becomes collectable once its tensor is closed, or, for a tensor never closed, once
   * the tensor is unreachable (the Cleaner releases the handle and the engine drops its reference).
   */
  @Test
  void closedOrForgottenTensorsLetGoOfTheirBuffer() throws InterruptedException {
    WeakReference<ByteBuffer> closed = borrow(true);
    WeakReference<ByteBuffer> forgotten = borrow(false);
    for (int i = 0; i < 100 && (closed.get() != null || forgotten.get() != null); i++) {
      System.gc();
      Thread.sleep(20);
    }
    assertNull(closed.get(), "the buffer of a closed tensor is still referenced");
    assertNull(forgotten.get(), "the buffer of an unreachable tensor is still referenced");
  }

  private static WeakReference<ByteBuffer> borrow(boolean close) {
    ByteBuffer buf = ByteBuffer.allocateDirect(16);
    Tensor t = Tensor.fromBuffer(DType.INT32, buf, 4);
    assertArrayEquals(new int[4], t.toIntArray());
    if (close) t.close();
    return new WeakReference<>(buf);
  }
}
