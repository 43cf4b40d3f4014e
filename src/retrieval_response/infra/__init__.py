"""Infrastructure every stage uses: input errors, atomic file writes, safe path names, job log files.

Modules: ``errors`` (``InputError``: file, record, rule), ``atomic`` (write to a temporary file,
then rename), ``paths`` (the one rule for values that become path components), ``logs`` (one
log file per job).
"""
