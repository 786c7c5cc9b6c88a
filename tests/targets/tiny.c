/* tiny.c - a program that does nothing: its whole measured interval is
 * psuite's start and end, where wall clock and CPU clocks must agree. */
int main(void) { return 0; }
