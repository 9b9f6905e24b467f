from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/toolchain.smk"
include: "workflow/rules/database.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/charts.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "reports/all",
