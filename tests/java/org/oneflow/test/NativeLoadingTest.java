// NativeLoadingTest.java — the native library loads from the place the test run expects (java.library.path,
// or the copies inside oneflow.jar) and then works.
package org.oneflow.test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.junit.jupiter.api.Test;
import org.oneflow.OneFlow;
import org.oneflow.Session;
import org.oneflow.Tensor;

class NativeLoadingTest {
  @Test
  void loadsFromTheExpectedPlace() {
    String expected = System.getProperty("oneflow.test.expectedSource");
    assertNotNull(expected, "ctest sets oneflow.test.expectedSource");
    assertEquals(expected, OneFlow.nativeLibrarySource());
    try (Tensor t = Tensor.fromArray(new int[] {7, 8, 9}, 3)) {
      assertArrayEquals(new int[] {7, 8, 9}, t.toIntArray());
    }
    try (Session s = InferenceTest.mainSession()) {
      InferenceTest.checkMainModel(s, 3);
    }
  }
}
