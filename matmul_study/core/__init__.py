"""The records every stage shares: element types (dtypes), the method registry and its backends, result files, and
the quantities and column lists of the tables (records).

May import: nothing else of the package. Every other group may import it."""
