"""Infrastructure every stage uses: input errors, the JSON record reader, atomic file writes, safe path
names, job log files.
"""
