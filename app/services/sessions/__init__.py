"""Session use cases: create, append, read, build context, prepare and compact."""
