package wql.kernels;

import org.apache.spark.TaskContext;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The memory a kernel's arrays hold, accounted with Spark's task memory manager as Spark's own
 * operators account theirs: Spark then spills its sorters and hash maps to make room for them, and
 * a partition too large for the executor fails with a message that says what to change, not with
 * an OutOfMemoryError that takes the executor down. Outside a Spark task nothing is accounted.
 */
final class TaskMemory extends MemoryConsumer {
  private final String kernel;
  private long peak;
  private long limit = Long.MAX_VALUE; // the most this kernel asks Spark for, else as much as Spark grants

  private TaskMemory(TaskContext task, String kernel) {
    super(task.taskMemoryManager(), MemoryMode.ON_HEAP);
    this.kernel = kernel;
    TaskCompletionListener done = finished -> releaseAll(); // also when the output is not read to the end
    task.addTaskCompletionListener(done);
  }

  /** The running task's accounting, or null outside a task. */
  static TaskMemory ofTask(String kernel) {
    TaskContext task = TaskContext.get();
    return task == null ? null : new TaskMemory(task, kernel);
  }

  /** Accounts `bytes` more, or fails ({@link Refused}) when Spark's execution memory cannot hold them. */
  void reserve(long bytes, long tuples) {
    if (!tryReserve(bytes)) {
      throw new Refused(
          String.format(
              "WQL's %s kernel holds a window's tuples in memory, and %,d tuples (%,d MB) do not fit in"
                  + " Spark's execution memory: raise spark.executor.memory (spark.driver.memory when local)",
              kernel, tuples, (getUsed() + bytes) >> 20));
    }
  }

  /** Accounts `bytes` more, or returns false (accounting nothing) when Spark cannot grant them. */
  boolean tryReserve(long bytes) {
    if (bytes <= 0) {
      return true; // Spark refuses requests for nothing
    }
    if (getUsed() + bytes > limit) {
      return false;
    }
    long granted = acquireMemory(bytes);
    if (granted < bytes) {
      freeMemory(granted);
      return false;
    }
    peak = Math.max(peak, getUsed());
    return true;
  }

  /**
   * The most this kernel held at once, reported to the task's metrics (peak execution memory, which
   * sums its operators' peaks): the larger of its arrays' peak and `other`'s (the sorter that took
   * over from them, as they were released).
   */
  void reportPeak(long other) {
    TaskContext task = TaskContext.get();
    long most = Math.max(peak, other);
    if (task != null && most > 0) {
      task.taskMetrics().incPeakExecutionMemory(most);
    }
    peak = 0;
  }

  /** Spark's execution memory could not hold what a kernel asked for. */
  static final class Refused extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message);
    }
  }

  /** Refuses reservations past `bytes` (negative: no limit of its own). */
  TaskMemory limitedTo(long bytes) {
    limit = bytes < 0 ? Long.MAX_VALUE : bytes;
    return this;
  }

  void release(long bytes) {
    long freed = Math.min(bytes, getUsed());
    if (freed > 0) {
      freeMemory(freed);
    }
  }

  void releaseAll() {
    long used = getUsed();
    if (used > 0) {
      freeMemory(used);
    }
  }

  @Override
  public long spill(long size, MemoryConsumer trigger) {
    return 0; // the tuples are needed whole: nothing to write out
  }
}
