// Outputs.java — the tensors one Session.run returned, closed together.
package org.oneflow;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/** The outputs of a run, by name and by position. Closing it closes every tensor in it. */
public final class Outputs implements AutoCloseable {
  private final Map<String, Tensor> byName = new LinkedHashMap<>();
  private final List<String> names;
  private final Tensor[] tensors;

  /** Adopts the engine's output handles at once, so none leaks if a later step fails. */
  Outputs(List<String> names, long[] handles) {
    tensors = new Tensor[handles.length];
    for (int i = 0; i < handles.length; i++) tensors[i] = Tensor.adopt(handles[i]);
    this.names = Collections.unmodifiableList(names);
    for (int i = 0; i < tensors.length; i++) byName.put(names.get(i), tensors[i]);
  }

  public int size() {
    return tensors.length;
  }

  /** Output names, in result order. */
  public List<String> names() {
    return names;
  }

  public Tensor get(int index) {
    return tensors[index];
  }

  /** The output called {@code name}; NoSuchElementException when the run did not return it. */
  public Tensor get(String name) {
    Tensor t = byName.get(name);
    if (t == null) throw new NoSuchElementException("no output named '" + name + "'; the run returned " + names);
    return t;
  }

  /** An unmodifiable name-to-tensor view in result order. */
  public Map<String, Tensor> asMap() {
    return Collections.unmodifiableMap(byName);
  }

  @Override
  public void close() {
    for (Tensor t : tensors) t.close();
  }
}
