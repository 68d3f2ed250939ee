"""Command-line tools that read the step cache and write docs/: tables, report. Not steps."""
