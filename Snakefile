import gc
import sys

from snakemake.utils import min_version

# Everything Snakemake loaded so far (its modules and plugins) is never garbage: leave it out of
# every collection, and out of the one at exit. A rerun with nothing to do took 2.2 s, half a
# second of it collecting these objects (measured 2026-12-01).
gc.freeze()

min_version("9.0")

# A configuration file that is not YAML, named with its line (Snakemake's own message names neither).
sys.path.insert(0, f"{workflow.basedir}/scripts")
from nodebench.configcheck import yaml_problems  # noqa: E402

if _problems := yaml_problems("config.yaml", "experiments.yaml"):
    raise WorkflowError("\n".join(_problems))


configfile: "config.yaml"
# The experiments beside the main matrix, each with its own target (reports/<name>/all).
configfile: "experiments.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/toolchain.smk"
include: "workflow/rules/database.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/adaptive.smk"
include: "workflow/rules/failures.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/charts.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/claims.smk"


# Light jobs that a cluster executor runs on the submitting host instead of as cluster jobs say so in their own
# rule (`localrule: True`; no effect on a local run): installing the servers' packages needs the npm registry,
# which compute nodes often cannot reach, and the tail of the pipeline takes seconds, less than one scheduler round
# trip. Only the measurements, the expected failures and the database template go to the cluster.


rule all:
    input:
        "reports/all",
