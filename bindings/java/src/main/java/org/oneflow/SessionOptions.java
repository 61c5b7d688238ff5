// SessionOptions.java — how a session is compiled (oneflow_session_options_t plus the env to use).
package org.oneflow;

/**
 * Options for creating a {@link Session}. A field left unset keeps the engine's default (the glue
 * starts from {@code oneflow_session_options_init}). Not thread-safe: build, then share.
 */
public final class SessionOptions {
  static final int SET_INTRA_OP_THREADS = 1;
  static final int SET_OPTIMIZATION_LEVEL = 2;

  private Env env;
  private int setMask;
  private int intraOpThreads;
  private int optimizationLevel;

  /** The environment to use; null (default) uses the engine's default environment. */
  public SessionOptions env(Env env) {
    this.env = env;
    return this;
  }

  /** Threads per run; 0 (the engine's default) means one per core. */
  public SessionOptions intraOpThreads(int threads) {
    this.intraOpThreads = threads;
    setMask |= SET_INTRA_OP_THREADS;
    return this;
  }

  /** 0 none; 1 constant folding and dead code elimination; 2 (the engine's default) also fusions. */
  public SessionOptions optimizationLevel(int level) {
    this.optimizationLevel = level;
    setMask |= SET_OPTIMIZATION_LEVEL;
    return this;
  }

  Env env() {
    return env;
  }

  int setMask() {
    return setMask;
  }

  int intraOpThreads() {
    return intraOpThreads;
  }

  int optimizationLevel() {
    return optimizationLevel;
  }
}
