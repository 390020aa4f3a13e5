# not supported yet: Spark plans for slide-by-tuple windows
