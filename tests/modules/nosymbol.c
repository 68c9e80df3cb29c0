/* A shared object without the strata_module_v1 entry: refused as "not a Strata module". */
__attribute__((visibility("default"))) int not_a_module(void) {
  return 1;
}
