"""Infrastructure every stage uses: input errors, the JSON record reader, atomic file writes, safe path
names, job log files.

Modules: ``errors`` (``InputError``: file, record, rule), ``json_records`` (the one reader of JSON
arrays and JSON lines, 1-based record labels), ``atomic`` (write to a temporary file, then rename),
``paths`` (the one rule for values that become path components), ``logs`` (one log file per job).
"""
