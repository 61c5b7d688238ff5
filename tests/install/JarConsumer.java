// JarConsumer.java — compiled and run with only the JDK against the Java binding's jar as installed in a
// local Maven repository (tests/install/consumer_test.sh maven): the natives load from the jar, the demo
// model gives numpy's answer, and every library the jar carries that this process maps comes from the
// jar's extraction directory, none from the system.
//   java -cp <repo>/io/github/oneflow-engine/oneflow/<v>/oneflow-<v>.jar:. JarConsumer MODEL.onnx EXPECTED.f32
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.oneflow.OneFlow;
import org.oneflow.Outputs;
import org.oneflow.Session;
import org.oneflow.SessionOptions;
import org.oneflow.Tensor;

public class JarConsumer {
  static Set<String> mappedFiles() throws IOException {
    Set<String> files = new TreeSet<>();
    for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 6 && f[5].startsWith("/")) files.add(f[5]);
    }
    return files;
  }

  static void fail(String message) {
    System.err.println("FAIL: " + message);
    System.exit(1);
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 2) {
      System.err.println("usage: JarConsumer MODEL.onnx EXPECTED.f32");
      System.exit(2);
    }
    Set<String> before = mappedFiles(); // nothing of org.oneflow is loaded yet

    float[] x = new float[64];
    for (int i = 0; i < x.length; i++) x[i] = (i % 7) * 0.5f - 1.5f; // examples/c/infer.c's input
    float[] probs;
    try (Session session = Session.load(Path.of(args[0]), new SessionOptions().intraOpThreads(1));
        Tensor input = Tensor.fromArray(x, 1, 64);
        Outputs outputs = session.run(Map.of("x", input))) {
      probs = outputs.get("probs").toFloatArray();
    }
    System.out.println("oneflow " + OneFlow.version() + " (C ABI " + OneFlow.apiVersion() + "), natives from "
        + OneFlow.nativeLibrarySource());
    if (!"jar".equals(OneFlow.nativeLibrarySource())) fail("the natives did not come from the jar");

    ByteBuffer want = ByteBuffer.wrap(Files.readAllBytes(Path.of(args[1]))).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < probs.length; i++) {
      float w = want.getFloat();
      if (Math.abs(probs[i] - w) > 1e-5f) fail("probs[" + i + "] = " + probs[i] + ", numpy says " + w);
    }
    System.out.println("output matches numpy's");

    String platformDir = "org/oneflow/native/linux-" + (System.getProperty("os.arch").equals("amd64") ? "x86_64"
        : System.getProperty("os.arch"));
    Set<String> carried = new HashSet<>();
    try (InputStream in = JarConsumer.class.getClassLoader().getResourceAsStream(platformDir + "/MANIFEST")) {
      if (in == null) fail("the jar has no " + platformDir + "/MANIFEST");
      for (String name : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (!name.isBlank()) carried.add(name.trim());
      }
    }
    // Libraries the JVM had mapped before (libz, say) are legitimately reused; all the others must come
    // from the one directory the binding extracted the jar's natives to.
    Set<String> dirs = new TreeSet<>();
    int fromJar = 0;
    for (String file : mappedFiles()) {
      String name = Path.of(file).getFileName().toString();
      if (!carried.contains(name) || before.contains(file)) continue;
      dirs.add(Path.of(file).getParent().toString());
      fromJar++;
    }
    List<String> engine = Arrays.asList("liboneflow.so.0", "liboneflow_jni.so");
    if (dirs.size() != 1 || !dirs.iterator().next().contains("oneflow-native-")) {
      fail("carried libraries mapped from " + dirs + ", expected the extraction directory alone");
    }
    for (String e : engine) {
      if (!carried.contains(e)) fail("the jar's MANIFEST does not list " + e);
    }
    System.out.println(fromJar + " of the " + carried.size() + " carried libraries mapped, all from " + dirs.iterator().next());
  }
}
