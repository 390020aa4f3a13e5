# not supported yet: Spark plans for slide-by-rank windows
