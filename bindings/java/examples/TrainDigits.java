// TrainDigits.java — the Java binding's training example: trains the digits MLP for an epoch through a
// TrainingSession, prints a progress line and the test accuracy, exports the trained model to the
// native format and serves one prediction from the saved file.
//
// Usage (a single-file program):
//   java -cp build/bindings/java/oneflow.jar bindings/java/examples/TrainDigits.java DATA_DIR MODEL.onnx OUT_DIR
//        [--epochs N] [--min-accuracy PCT]
// DATA_DIR holds train_x/train_y/test_x/test_y.npy (examples/c/make_digits_data.py), MODEL.onnx the
// untrained MLP "input" [N, 64] -> "logits" [N, 10] (examples/c/make_digits_models.py). Exits 1 when
// the test accuracy is below --min-accuracy.
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import org.oneflow.Graph;
import org.oneflow.OneflowException;
import org.oneflow.Outputs;
import org.oneflow.RunMode;
import org.oneflow.Session;
import org.oneflow.SessionOptions;
import org.oneflow.Tensor;
import org.oneflow.TrainingOptions;
import org.oneflow.TrainingSession;

public class TrainDigits {
  /** A little-endian float32 or int64 .npy array, C order: its rows, columns (1 for 1-D) and data. */
  record Npy(int rows, int cols, float[] f, long[] l) {}

  static Npy readNpy(Path p) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
    if (b.get(0) != (byte) 0x93 || b.get(1) != 'N') throw new IOException(p + ": not a .npy file");
    int major = b.get(6);
    int headerLen = major == 1 ? Short.toUnsignedInt(b.getShort(8)) : b.getInt(8);
    int start = major == 1 ? 10 : 12;
    String header = new String(b.array(), start, headerLen, StandardCharsets.US_ASCII);
    String shape = header.substring(header.indexOf("'shape': (") + 10, header.indexOf(')', header.indexOf("'shape'")));
    String[] dims = shape.split(",");
    int rows = Integer.parseInt(dims[0].trim());
    int cols = dims.length > 1 && !dims[1].isBlank() ? Integer.parseInt(dims[1].trim()) : 1;
    b.position(start + headerLen);
    if (header.contains("'<f4'")) {
      float[] f = new float[rows * cols];
      b.asFloatBuffer().get(f);
      return new Npy(rows, cols, f, null);
    }
    if (!header.contains("'<i8'")) throw new IOException(p + ": want <f4 or <i8");
    long[] l = new long[rows];
    b.asLongBuffer().get(l);
    return new Npy(rows, cols, null, l);
  }

  static int argmax(float[] v, int offset, int n) {
    int best = 0;
    for (int c = 1; c < n; c++) if (v[offset + c] > v[offset + best]) best = c;
    return best;
  }

  /** Accuracy in % of the session in eval mode on (x, y), as one batch. */
  static double evaluate(TrainingSession s, Npy x, Npy y) {
    s.setRunMode(RunMode.EVAL);
    try (Tensor in = Tensor.fromArray(x.f(), x.rows(), x.cols()); Outputs out = s.run(Map.of("input", in), "logits")) {
      float[] logits = out.get(0).toFloatArray();
      int correct = 0;
      for (int i = 0; i < x.rows(); i++) if (argmax(logits, i * 10, 10) == y.l()[i]) correct++;
      return 100.0 * correct / x.rows();
    } finally {
      s.setRunMode(RunMode.TRAIN);
    }
  }

  public static void main(String[] args) throws IOException {
    if (args.length < 3) {
      System.err.println("usage: TrainDigits.java DATA_DIR MODEL.onnx OUT_DIR [--epochs N] [--min-accuracy PCT]");
      System.exit(2);
    }
    Path data = Path.of(args[0]), model = Path.of(args[1]), outDir = Path.of(args[2]);
    int epochs = 1, batch = 32;
    double minAccuracy = 0;
    for (int i = 3; i + 1 < args.length; i += 2) {
      if (args[i].equals("--epochs")) epochs = Integer.parseInt(args[i + 1]);
      else if (args[i].equals("--min-accuracy")) minAccuracy = Double.parseDouble(args[i + 1]);
      else throw new IllegalArgumentException("unknown option " + args[i]);
    }
    Npy xtr = readNpy(data.resolve("train_x.npy")), ytr = readNpy(data.resolve("train_y.npy"));
    Npy xte = readNpy(data.resolve("test_x.npy")), yte = readNpy(data.resolve("test_y.npy"));
    int n = xtr.rows(), d = xtr.cols();
    long stepsTotal = (long) epochs * ((n + batch - 1) / batch);
    TrainingOptions options = new TrainingOptions()
        .loss(TrainingOptions.Loss.SOFTMAX_CROSS_ENTROPY).logitsOutput("logits").labelsInput("labels")
        .optimizer(TrainingOptions.Optimizer.ADAMW).learningRate(1e-2f).weightDecay(1e-4f)
        .lrSchedule(TrainingOptions.LrSchedule.COSINE).warmup(stepsTotal / 20, 0.1f)
        .cosineSchedule(stepsTotal - stepsTotal / 20, 0.05f).maxGradNorm(5f);
    Path exported = outDir.resolve("trained_java.ofm");
    try (TrainingSession s = TrainingSession.load(model, new SessionOptions().intraOpThreads(2), options)) {
      int[] perm = new int[n];
      for (int i = 0; i < n; i++) perm[i] = i;
      Random rng = new Random(7);
      float[] bx = new float[batch * d];
      long[] by = new long[batch];
      for (int epoch = 0; epoch < epochs; epoch++) {
        long t0 = System.nanoTime();
        for (int i = n - 1; i > 0; i--) { // Fisher-Yates
          int j = rng.nextInt(i + 1), t = perm[i];
          perm[i] = perm[j];
          perm[j] = t;
        }
        double lossSum = 0;
        int correct = 0;
        for (int b = 0; b < n; b += batch) {
          int m = Math.min(batch, n - b); // the short last batch is re-planned by the engine
          for (int i = 0; i < m; i++) {
            System.arraycopy(xtr.f(), perm[b + i] * d, bx, i * d, d);
            by[i] = ytr.l()[perm[b + i]];
          }
          float[] xs = m == batch ? bx : java.util.Arrays.copyOf(bx, m * d);
          long[] ys = m == batch ? by : java.util.Arrays.copyOf(by, m);
          try (Tensor x = Tensor.fromArray(xs, m, d); Tensor y = Tensor.fromArray(ys, m);
              Outputs out = s.run(Map.of("input", x, "labels", y))) {
            s.backward();
            if (!s.step()) System.err.println("warning: a step was skipped (NaN/Inf)");
            float[] logits = out.get("logits").toFloatArray();
            for (int i = 0; i < m; i++) if (argmax(logits, i * 10, 10) == ys[i]) correct++;
            lossSum += out.get("loss").toFloatArray()[0] * m;
          }
        }
        System.out.printf("epoch %d/%d  loss %.4f  train acc %5.1f%%  test acc %5.1f%%  lr %.2e  step %d  %.2f s%n",
            epoch + 1, epochs, lossSum / n, 100.0 * correct / n, evaluate(s, xte, yte), s.state().learningRate(),
            s.state().step(), (System.nanoTime() - t0) * 1e-9);
      }
      double accuracy = evaluate(s, xte, yte);
      System.out.printf("test accuracy %.2f%% (%d samples)%n", accuracy, xte.rows());
      Files.createDirectories(outDir);
      try (Graph g = s.exportModel()) {
        g.save(exported);
      }
      // Serve one prediction from the saved native file through a plain inference session.
      try (Session inf = Session.load(exported, null); Tensor x = Tensor.fromArray(java.util.Arrays.copyOf(xte.f(), d), 1, d);
          Outputs out = inf.run(Map.of("input", x))) {
        System.out.printf("served from %s: test sample 0 is a %d; its label is %d%n", exported.getFileName(),
            argmax(out.get(0).toFloatArray(), 0, 10), yte.l()[0]);
      }
      if (accuracy < minAccuracy) {
        System.err.printf("test accuracy %.2f%% is below the required %.2f%%%n", accuracy, minAccuracy);
        System.exit(1);
      }
    } catch (OneflowException e) {
      System.err.println("oneflow error: " + e.getMessage());
      System.exit(1);
    }
  }
}
