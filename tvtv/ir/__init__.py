"""The only code that touches TVM's Python API: reading modules, running passes and the VM."""
