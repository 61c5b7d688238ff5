// NativeHandle.java — the lifetime and locking shared by every Java object that owns a C handle.
package org.oneflow;

import java.lang.ref.Cleaner;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongConsumer;

/**
 * Owns one C handle. Every native call on it holds the read lock ({@link #lock}/{@link #unlock}), and
 * {@link #close} takes the write lock, so a close waits for calls in flight on other threads and any
 * call after it throws IllegalStateException: the C rule "never release a handle another thread uses"
 * cannot be broken from Java. A handle that is never closed is released by a Cleaner once unreachable
 * (a safety net, not a substitute for try-with-resources: native memory is invisible to the GC).
 */
abstract class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  private final ReentrantReadWriteLock rw = new ReentrantReadWriteLock();
  private final String kind;
  private final Cleaner.Cleanable cleanable;
  private long handle;

  /** Takes ownership of {@code handle}, released with {@code release} (a static method reference). */
  NativeHandle(String kind, long handle, LongConsumer release) {
    this.kind = kind;
    this.handle = handle;
    this.cleanable = CLEANER.register(this, new Releaser(handle, release));
  }

  /** The live handle, with the read lock held; pair with {@link #unlock} in a finally block. */
  final long lock() {
    rw.readLock().lock();
    if (handle == 0) {
      rw.readLock().unlock();
      throw new IllegalStateException(kind + " is closed");
    }
    return handle;
  }

  final void unlock() {
    rw.readLock().unlock();
  }

  /** Whether {@link #close} has run. */
  public final boolean isClosed() {
    rw.readLock().lock();
    try {
      return handle == 0;
    } finally {
      rw.readLock().unlock();
    }
  }

  /** Releases the native object once calls in flight on it have returned. Idempotent. */
  @Override
  public void close() {
    rw.writeLock().lock();
    try {
      if (handle != 0) {
        handle = 0;
        cleanable.clean();
      }
    } finally {
      rw.writeLock().unlock();
    }
  }

  /** The release action; holds no reference to the owner so the owner can become unreachable. */
  private static final class Releaser implements Runnable {
    private final long handle;
    private final LongConsumer release;

    Releaser(long handle, LongConsumer release) {
      this.handle = handle;
      this.release = release;
    }

    @Override
    public void run() {
      release.accept(handle);
    }
  }
}
