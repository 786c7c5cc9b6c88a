// What CubeLib reads in a cube, at full precision (%.17g; cube_dump prints 6 digits):
//   cnode <id> <parent id or -1> <region name>
//   location <id> <process name> <process rank> <thread rank>
//   value <metric> <cnode id> <location id or *> <call-tree inclusive> <call-tree exclusive>
// values along the metric tree inclusive (cube_dump's default -x incl); "*" is the whole system.
// Built and run by make.sh against the CubeLib it is given; never part of psuite.
#include <Cube.h>
#include <CubeCnode.h>
#include <CubeLocation.h>
#include <CubeLocationGroup.h>
#include <CubeMetric.h>
#include <CubeRegion.h>
#include <cstdio>
#include <vector>

using namespace cube;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: cube_values FILE.cubex\n");
        return 2;
    }
    Cube c;
    c.openCubeReport(argv[1]);
    const std::vector<Cnode*>& cnodes = c.get_cnodev();
    const std::vector<Location*>& locs = c.get_locationv();
    for (Cnode* n : cnodes)
        std::printf("cnode\t%u\t%d\t%s\n", n->get_id(), n->get_parent() ? (int)n->get_parent()->get_id() : -1,
                    n->get_callee()->get_name().c_str());
    for (Location* l : locs)
        std::printf("location\t%u\t%s\t%d\t%d\n", l->get_id(), l->get_parent()->get_name().c_str(),
                    l->get_parent()->get_rank(), l->get_rank());
    for (Metric* m : c.get_metv()) {
        for (Cnode* n : cnodes) {
            for (Location* l : locs)
                std::printf("value\t%s\t%u\t%u\t%.17g\t%.17g\n", m->get_uniq_name().c_str(), n->get_id(), l->get_id(),
                            c.get_sev(m, CUBE_CALCULATE_INCLUSIVE, n, CUBE_CALCULATE_INCLUSIVE, l, CUBE_CALCULATE_INCLUSIVE),
                            c.get_sev(m, CUBE_CALCULATE_INCLUSIVE, n, CUBE_CALCULATE_EXCLUSIVE, l, CUBE_CALCULATE_INCLUSIVE));
            std::printf("value\t%s\t%u\t*\t%.17g\t%.17g\n", m->get_uniq_name().c_str(), n->get_id(),
                        c.get_sev(m, CUBE_CALCULATE_INCLUSIVE, n, CUBE_CALCULATE_INCLUSIVE),
                        c.get_sev(m, CUBE_CALCULATE_INCLUSIVE, n, CUBE_CALCULATE_EXCLUSIVE));
        }
    }
    return 0;
}
