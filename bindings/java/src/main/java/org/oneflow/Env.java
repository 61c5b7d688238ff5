// Env.java — process-wide engine state shared by sessions (oneflow_env_t).
package org.oneflow;

/**
 * An environment: devices today and, later, the distributed context. Optional: sessions created
 * without one use the engine's default. Sessions keep what they need, so an Env may be closed before
 * them. Thread-safe.
 */
public final class Env extends NativeHandle {
  public Env() {
    super("Env", Native.envCreate(), Native::envRelease);
  }
}
