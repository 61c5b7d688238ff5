// Infer.java — the Java binding's example: load an ONNX model, run one inference, print the result.
//
// Usage (a single-file program, no separate compile step):
//   java -cp build/bindings/java/oneflow.jar bindings/java/examples/Infer.java MODEL.onnx [EXPECTED.f32]
// MODEL.onnx is the demo classifier examples/c/make_model.py writes (input x: float32[N, 64], output
// probs: float32[N, 10]); with EXPECTED.f32 (numpy's answer) it exits 1 when the output differs.
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.oneflow.OneflowException;
import org.oneflow.Outputs;
import org.oneflow.Session;
import org.oneflow.SessionOptions;
import org.oneflow.Tensor;
import org.oneflow.ValueInfo;

public class Infer {
  public static void main(String[] args) throws IOException {
    if (args.length < 1) {
      System.err.println("usage: java -cp oneflow.jar Infer.java MODEL.onnx [EXPECTED.f32]");
      System.exit(2);
    }
    float[] x = new float[64];
    for (int i = 0; i < x.length; i++) x[i] = (i % 7) * 0.5f - 1.5f; // the input make_model.py assumed

    try (Session session = Session.load(Path.of(args[0]), new SessionOptions().intraOpThreads(1));
        Tensor input = Tensor.fromArray(x, 1, 64);
        Outputs outputs = session.run(Map.of("x", input))) {
      for (ValueInfo v : session.inputs()) System.out.println("input  " + v);
      for (ValueInfo v : session.outputs()) System.out.println("output " + v);
      float[] probs = outputs.get("probs").toFloatArray();
      int best = 0;
      for (int i = 1; i < probs.length; i++) if (probs[i] > probs[best]) best = i;
      System.out.printf("class %d with probability %.5f%n", best, probs[best]);

      if (args.length > 1) {
        ByteBuffer want = ByteBuffer.wrap(Files.readAllBytes(Path.of(args[1]))).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < probs.length; i++) {
          float w = want.getFloat();
          if (Math.abs(probs[i] - w) > 1e-5f) {
            System.err.printf("probs[%d] = %f, expected %f%n", i, probs[i], w);
            System.exit(1);
          }
        }
        System.out.println("matches the expected output");
      }
    } catch (OneflowException e) {
      System.err.println("oneflow: " + e.getMessage()); // e.code() says which kind of failure
      System.exit(1);
    }
  }
}
