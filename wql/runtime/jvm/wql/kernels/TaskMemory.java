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

  /** Accounts `bytes` more, or fails when Spark's execution memory cannot hold them. */
  void reserve(long bytes, long tuples) {
    if (bytes <= 0) {
      return; // Spark refuses requests for nothing
    }
    long granted = acquireMemory(bytes);
    if (granted < bytes) {
      freeMemory(granted);
      throw new IllegalStateException(
          String.format(
              "WQL's %s kernel holds each partition's tuples in memory, and %,d tuples (%,d MB) do not fit in"
                  + " Spark's execution memory: raise spark.executor.memory (spark.driver.memory when local),"
                  + " spread the keys over more partitions (spark.sql.shuffle.partitions), or run with --plan over",
              kernel, tuples, (getUsed() + bytes) >> 20));
    }
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
