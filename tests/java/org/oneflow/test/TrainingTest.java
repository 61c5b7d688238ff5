// TrainingTest.java — TrainingSession against numpy: gradients, an SGD step by the update rule, a
// checkpoint round trip, export + save + load + run, and the error mapping of the training calls.
package org.oneflow.test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.oneflow.OneflowException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.oneflow.Graph;
import org.oneflow.ModelFormat;
import org.oneflow.Outputs;
import org.oneflow.RunMode;
import org.oneflow.Session;
import org.oneflow.SessionOptions;
import org.oneflow.StatusCode;
import org.oneflow.Tensor;
import org.oneflow.TrainingOptions;
import org.oneflow.TrainingSession;
import org.oneflow.TrainingState;

/**
 * The training fixture (tests/train/make_train_fixture.py): mlp.onnx (x [N, 4] -> 8 -> ReLU -> 3 =
 * logits), x [5, 4], labels [5], and numpy's float64 loss and gradients of the mean softmax
 * cross-entropy, stored as float32.
 */
class TrainingTest {
  static final List<String> PARAMS = List.of("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias");

  static Path train(String name) {
    return Fixtures.dir("oneflow.test.train").resolve(name);
  }

  static TrainingOptions sgd(float lr) {
    return new TrainingOptions().logitsOutput("logits").optimizer(TrainingOptions.Optimizer.SGD).learningRate(lr);
  }

  static TrainingSession session(String model, TrainingOptions options) {
    return TrainingSession.load(train(model), new SessionOptions().intraOpThreads(2), options);
  }

  /** One train-mode run on the fixture batch; returns the loss. */
  static float runBatch(TrainingSession s) {
    try (Tensor x = Tensor.fromArray(Fixtures.floats(train("x.f32")), 5, 4);
        Tensor y = Tensor.fromArray(Fixtures.longs(train("y.i64")), 5);
        Outputs out = s.run(Map.of("x", x, "labels", y))) {
      assertEquals(List.of("logits", "loss"), out.names());
      return out.get("loss").toFloatArray()[0];
    }
  }

  static void assertClose(float[] expected, float[] actual, double tol, String what) {
    assertEquals(expected.length, actual.length, what + ": length");
    for (int i = 0; i < expected.length; i++) {
      double err = Math.abs(expected[i] - actual[i]);
      assertTrue(err <= tol * (1 + Math.abs(expected[i])), what + "[" + i + "]: " + actual[i] + " vs " + expected[i]);
    }
  }

  @Test
  void optionsStartFromTheEngineDefaults() {
    TrainingOptions o = new TrainingOptions();
    // docs/training.md: Adam, lr 1e-3, softmax cross-entropy against "labels".
    assertEquals(TrainingOptions.Optimizer.ADAM, o.optimizer());
    assertEquals(1e-3f, o.learningRate(), 1e-9f);
    assertEquals(TrainingOptions.Loss.SOFTMAX_CROSS_ENTROPY, o.loss());
    assertEquals("labels", o.labelsInput());
  }

  @Test
  void gradientsMatchNumpy() {
    try (TrainingSession s = session("mlp.onnx", sgd(0.1f))) {
      assertEquals(PARAMS, s.parameterNames());
      assertEquals("labels", s.inputs().get(s.inputs().size() - 1).name());
      float loss = runBatch(s);
      assertEquals(Fixtures.floats(train("loss.f32"))[0], loss, 1e-5);
      for (String p : PARAMS) assertClose(new float[Fixtures.floats(train("grad_" + p + ".f32")).length],
          s.gradientFloats(p), 0, "gradient before backward");
      s.backward();
      for (String p : PARAMS) assertClose(Fixtures.floats(train("grad_" + p + ".f32")), s.gradientFloats(p), 1e-4, p);
      // The gradient as a tensor and as a ByteBuffer holds the same values.
      try (Tensor g = s.gradient("fc2.bias")) {
        assertArrayEquals(new long[] {3}, g.shape());
        ByteBuffer b = g.toByteBuffer().order(ByteOrder.nativeOrder());
        assertEquals(g.toFloatArray()[2], b.getFloat(8));
      }
      assertEquals(loss, s.state().lastLoss(), 1e-6);
    }
  }

  @Test
  void sgdStepFollowsTheUpdateRule() {
    float lr = 0.1f;
    try (TrainingSession s = session("mlp.onnx", sgd(lr))) {
      runBatch(s);
      s.backward();
      assertTrue(s.step());
      TrainingState st = s.state();
      assertEquals(1, st.step());
      for (String p : PARAMS) {
        float[] init = Fixtures.floats(train("init_" + p + ".f32"));
        float[] grad = Fixtures.floats(train("grad_" + p + ".f32"));
        float[] expected = new float[init.length];
        for (int i = 0; i < init.length; i++) expected[i] = init[i] - lr * grad[i];
        assertClose(expected, s.parameterFloats(p), 1e-5, "SGD update of " + p);
        // The step zeroed the gradients.
        assertClose(new float[init.length], s.gradientFloats(p), 0, "gradient after step");
      }
    }
  }

  @Test
  void setParameterFromArrayAndBuffer() {
    try (TrainingSession s = session("mlp.onnx", sgd(0.1f))) {
      s.setParameter("fc2.bias", new float[] {1, 2, 3});
      assertArrayEquals(new float[] {1, 2, 3}, s.parameterFloats("fc2.bias"));
      ByteBuffer b = ByteBuffer.allocateDirect(12).order(ByteOrder.nativeOrder());
      b.putFloat(4).putFloat(5).putFloat(6).flip();
      s.setParameter("fc2.bias", b);
      assertArrayEquals(new float[] {4, 5, 6}, s.parameterFloats("fc2.bias"));
      ErrorTest.expect(StatusCode.INVALID_ARGUMENT, "fc2.bias", () -> {
        try (Tensor wrong = Tensor.fromArray(new float[] {1, 2}, 2)) {
          s.setParameter("fc2.bias", wrong);
        }
      });
    }
  }

  @Test
  void checkpointRoundTrip(@TempDir Path dir) {
    Path ckpt = dir.resolve("run.ckpt");
    TrainingOptions momentum = sgd(0.05f).momentum(0.9f).deterministic(true, 3);
    try (TrainingSession a = session("mlp.onnx", momentum); TrainingSession b = session("mlp.onnx", momentum)) {
      runBatch(a);
      a.backward();
      a.step();
      a.saveCheckpoint(ckpt);
      assertTrue(Files.isRegularFile(ckpt));
      for (int i = 0; i < 2; i++) { // two more steps: the momentum buffer matters
        runBatch(a);
        a.backward();
        a.step();
      }
      b.loadCheckpoint(ckpt);
      assertEquals(1, b.state().step());
      for (int i = 0; i < 2; i++) {
        runBatch(b);
        b.backward();
        b.step();
      }
      assertEquals(3, b.state().step());
      for (String p : PARAMS) assertArrayEquals(a.parameterFloats(p), b.parameterFloats(p), p + " after resume");
      // Not a fresh start: the parameters moved away from the initial ones.
      assertFalse(java.util.Arrays.equals(Fixtures.floats(train("init_fc1.weight.f32")), b.parameterFloats("fc1.weight")));
    }
    try (TrainingSession other = session("other.onnx", momentum)) {
      ErrorTest.expect(StatusCode.INVALID_ARGUMENT, "fc1.weight", () -> other.loadCheckpoint(ckpt));
    }
  }

  /** Logits of the MLP computed here with naive loops from the given parameters (the reference). */
  static float[] mlpLogits(float[] x, int rows, float[] w1, float[] b1, float[] w2, float[] b2) {
    float[] out = new float[rows * 3];
    for (int r = 0; r < rows; r++) {
      double[] h = new double[8];
      for (int j = 0; j < 8; j++) {
        double acc = b1[j];
        for (int k = 0; k < 4; k++) acc += (double) x[r * 4 + k] * w1[k * 8 + j];
        h[j] = Math.max(acc, 0);
      }
      for (int c = 0; c < 3; c++) {
        double acc = b2[c];
        for (int j = 0; j < 8; j++) acc += h[j] * w2[j * 3 + c];
        out[r * 3 + c] = (float) acc;
      }
    }
    return out;
  }

  @Test
  void exportSaveLoadAndRun(@TempDir Path dir) {
    float[] x = Fixtures.floats(train("x.f32"));
    try (TrainingSession s = session("mlp.onnx", sgd(0.5f))) {
      runBatch(s);
      s.backward();
      s.step();
      float[] expected = mlpLogits(x, 5, s.parameterFloats("fc1.weight"), s.parameterFloats("fc1.bias"),
          s.parameterFloats("fc2.weight"), s.parameterFloats("fc2.bias"));
      // Eval mode needs no labels and returns the model outputs only.
      s.setRunMode(RunMode.EVAL);
      try (Tensor tx = Tensor.fromArray(x, 5, 4); Outputs out = s.run(Map.of("x", tx))) {
        assertEquals(List.of("logits"), out.names());
        assertClose(expected, out.get(0).toFloatArray(), 1e-5, "eval logits");
      }
      Path ofm = dir.resolve("trained.ofm");
      Path onnx = dir.resolve("trained.onnx");
      try (Graph g = s.exportModel()) {
        g.save(ofm);
        g.save(onnx, ModelFormat.ONNX, null, true);
      }
      for (Path p : List.of(ofm, onnx)) {
        try (Session inf = Session.load(p, null); Tensor tx = Tensor.fromArray(x, 5, 4);
            Outputs out = inf.run(Map.of("x", tx))) {
          assertClose(expected, out.get("logits").toFloatArray(), 1e-5, "logits served from " + p.getFileName());
        }
      }
    }
  }

  @Test
  void errorsMapToExceptions(@TempDir Path dir) {
    TrainingSession s = session("mlp.onnx", sgd(0.1f));
    ErrorTest.expect(StatusCode.INVALID_ARGUMENT, "backward", s::backward);
    ErrorTest.expect(StatusCode.INVALID_ARGUMENT, "step", s::step);
    ErrorTest.expect(StatusCode.NOT_FOUND, "nope", () -> s.parameter("nope"));
    ErrorTest.expect(StatusCode.NOT_FOUND, "missing.ckpt", () -> s.loadCheckpoint(dir.resolve("missing.ckpt")));
    runBatch(s);
    s.backward();
    ErrorTest.expect(StatusCode.INVALID_ARGUMENT, "backward", s::backward); // twice after one run
    s.close();
    s.close(); // idempotent
    assertThrows(IllegalStateException.class, s::backward);
    assertThrows(IllegalStateException.class, s::step);
    assertThrows(IllegalStateException.class, () -> s.parameterFloats("fc1.bias"));
    assertThrows(IllegalStateException.class, () -> s.saveCheckpoint(dir.resolve("x.ckpt")));
    // Bad options name the field; a bad logits output is refused at creation.
    ErrorTest.expect(StatusCode.INVALID_ARGUMENT, "Nesterov", () -> session("mlp.onnx", sgd(0.1f).nesterov(true)));
    ErrorTest.expect(StatusCode.INVALID_ARGUMENT, "logits_output", () -> session("mlp.onnx", new TrainingOptions()));
    Graph g = Graph.load(train("mlp.onnx"));
    g.close();
    assertThrows(IllegalStateException.class, () -> new TrainingSession(g, null, sgd(0.1f)));
    assertThrows(IllegalStateException.class, () -> g.save(dir.resolve("closed.ofm")));
  }

  /**
   * Threads drive one session's state machine at once while another closes it: every call either
   * works, reports the engine's state error (INVALID_ARGUMENT), or finds the session closed; the
   * parameters stay finite.
   */
  @Test
  void concurrentCallsAndCloseEndCleanly() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    TrainingSession s = session("mlp.onnx", sgd(0.01f));
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        done.add(pool.submit(() -> {
          while (true) { // until the close below ends it
            try {
              runBatch(s);
              s.backward();
              s.step();
              for (float v : s.parameterFloats("fc1.weight")) assertTrue(Float.isFinite(v));
            } catch (OneflowException e) {
              assertEquals(StatusCode.INVALID_ARGUMENT, e.code(), e.getMessage());
            } catch (IllegalStateException e) {
              assertTrue(e.getMessage().contains("closed"), e.getMessage());
              return;
            }
          }
        }));
      }
      Thread.sleep(100);
      s.close();
      for (Future<?> f : done) f.get(120, TimeUnit.SECONDS); // rethrows any assertion failure
      assertTrue(s.isClosed());
    } finally {
      pool.shutdownNow();
    }
  }
}
