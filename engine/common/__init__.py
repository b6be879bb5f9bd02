"""Types every stage may share: a leaf package that imports no other engine module."""
