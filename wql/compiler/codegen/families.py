"""The generator module of each plan family, by the family's name in `Plan.family`.

Its own module so that the job and stream writers can look a family up without importing the
package that re-exports them (which would make the package and its writers import each other).
"""

from types import ModuleType

from wql.compiler.codegen import frames, grid, intervals, tuples

FAMILIES: dict[str, ModuleType] = {"grid": grid, "tuples": tuples, "frames": frames, "intervals": intervals}
