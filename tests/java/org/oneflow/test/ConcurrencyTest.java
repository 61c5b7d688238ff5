// ConcurrencyTest.java — one session run from many threads; a close racing with runs ends them cleanly.
package org.oneflow.test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.oneflow.Outputs;
import org.oneflow.Session;
import org.oneflow.Tensor;

class ConcurrencyTest {
  private static final int THREADS = 4;

  @Test
  void concurrentRunsOnOneSessionMatchNumpy() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try (Session s = InferenceTest.mainSession()) {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        final int id = t;
        done.add(pool.submit(() -> {
          for (int i = 0; i < 20; i++) InferenceTest.checkMainModel(s, (i + id) % 2 == 0 ? 3 : 5);
        }));
      }
      for (Future<?> f : done) f.get(120, TimeUnit.SECONDS); // rethrows any assertion failure
    } finally {
      pool.shutdownNow();
    }
  }

  /** Threads share one input tensor and read one output concurrently. */
  @Test
  void sharedTensorsAreReadConcurrently() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    float[] y3 = Fixtures.floats(Fixtures.capi("y3.f32"));
    try (Session s = InferenceTest.mainSession();
        Tensor x = Tensor.fromArray(Fixtures.floats(Fixtures.capi("x3.f32")), 3, 4);
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4);
        Outputs first = s.run(Map.of("x", x, "b", b))) {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        done.add(pool.submit(() -> {
          for (int i = 0; i < 20; i++) {
            try (Outputs out = s.run(Map.of("x", x, "b", b), "y")) {
              assertArrayEquals(y3, out.get(0).toFloatArray(), 1e-6f);
            }
            assertArrayEquals(y3, first.get("y").toFloatArray(), 1e-6f);
          }
        }));
      }
      for (Future<?> f : done) f.get(120, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Closing a session while other threads run it: close waits for runs in flight, and every later run
   * throws IllegalStateException. No other outcome (and no crash) is allowed.
   */
  @Test
  void closeRacingWithRunsIsSafe() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch started = new CountDownLatch(THREADS);
    Session s = InferenceTest.mainSession();
    float[] y3 = Fixtures.floats(Fixtures.capi("y3.f32"));
    try (Tensor x = Tensor.fromArray(Fixtures.floats(Fixtures.capi("x3.f32")), 3, 4);
        Tensor b = Tensor.fromArray(Fixtures.floats(Fixtures.capi("b3.f32")), 3, 4)) {
      List<Future<String>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        done.add(pool.submit(() -> {
          started.countDown();
          while (true) {
            try (Outputs out = s.run(Map.of("x", x, "b", b), "y")) {
              assertArrayEquals(y3, out.get(0).toFloatArray(), 1e-6f);
              runs.incrementAndGet();
            } catch (IllegalStateException closed) {
              return closed.getMessage();
            }
          }
        }));
      }
      started.await();
      while (runs.get() < 20) Thread.sleep(1);
      s.close();
      for (Future<String> f : done) assertEquals("Session is closed", f.get(60, TimeUnit.SECONDS));
      assertTrue(runs.get() >= 20);
    } finally {
      pool.shutdownNow();
    }
  }
}
