/* A library that needs another (libcplib.so): dlclose unloads both. */
double lib_entry(long n);

double outer_entry(long n) { return lib_entry(n) + 1; }
