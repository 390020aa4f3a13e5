"""Names a generated job writes and WQL's compiler, runtime and tests read: one definition for all of them.

A leaf: it imports nothing, so the compiler imports it as a module and a job carries its constants as
support code (wql.compiler.codegen.support copies a constant a job reads, as it copies functions).
"""

# EMIT CHANGES of sessions: the column that says whether a row is a session's new version or takes back one
# emitted before (docs/semantics.md §8.7).
CHANGE = "wql_change"
# The columns a stream's late-rows output adds to the row as read (docs/semantics.md §8.11), in order.
LATE_COLUMNS = ("wql_reason", "wql_missed", "wql_punctuation", "wql_trigger", "wql_record")
