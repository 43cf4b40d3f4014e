"""Set-up before the config is read: the library on the path, the Snakemake version, and YAML
alias bombs and repeated keys refused.

The library is imported from this checkout's src/: installed editable in install.sh's venv, not
installed at all in a --sdm conda setup (envs/snakemake.yaml, envs/<stage>.yaml). A YAML alias
bomb stops here, in one line, before anything walks the config: Snakemake has loaded a
--configfile already (as a graph of shared references, which is quick) but not yet validated it,
and config.yaml is read only after this file. (A bomb of nested mappings given with --configfile
hangs in Snakemake's own config merge, before the Snakefile runs.) A key given twice in one
mapping of a config file stops here too (``infra.yaml_files.check_unique_keys``), in one line
naming the file, the key and its line: Snakemake's loader would keep the last value silently.
"""

import sys
from pathlib import Path

from snakemake.utils import min_version

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from retrieval_response.infra.errors import InputError
from retrieval_response.infra.yaml_files import check_unique_keys
from retrieval_response.workflow_config.yaml_bounds import check_yaml_expansion

min_version("9.0")

for _config_path in workflow.overwrite_configfiles or ["config.yaml"]:
    try:
        check_yaml_expansion(_config_path)
        check_unique_keys(_config_path)
    except InputError as error:
        sys.exit(str(error))
