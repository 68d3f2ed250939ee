"""data stage of the DAG; see steps/__init__.py."""
