// OneflowException.java — an engine status turned into a Java exception.
package org.oneflow;

/**
 * Thrown when the engine refuses a call. {@link #code()} says why (one {@link StatusCode} per C status
 * code); the message is the engine's own, naming the problem. Unchecked, like the JDK's
 * IllegalArgumentException: most failures are programming or model errors, not conditions to recover from.
 */
public class OneflowException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final StatusCode code;
  private final String engineMessage;

  /** Called from the JNI glue with the status code and its UTF-8 message. */
  OneflowException(int code, byte[] message) {
    this(StatusCode.of(code), Utf8.decode(message));
  }

  public OneflowException(StatusCode code, String engineMessage) {
    super(code + ": " + engineMessage);
    this.code = code;
    this.engineMessage = engineMessage;
  }

  public StatusCode code() {
    return code;
  }

  /** The engine's message without the code prefix. */
  public String engineMessage() {
    return engineMessage;
  }
}
