/*
 * crsim: the command-line tool.  The subcommands, their options, the help
 * and the exit statuses are one table in sim/exp/cli.c (crsim --help).
 * Exit status: 0 success, 2 bad input (config, spec, trace, command line),
 * 1 other failures (database, out of memory), 130 interrupted.
 */
#include "sim/exp/cli.h"

int main(int argc, char **argv)
{
    exp_hugepages(argv);
    exp_tune_malloc();
    return exp_cli_main(argc, argv);
}
