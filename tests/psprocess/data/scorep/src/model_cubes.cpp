// Writes small cubes through libcube4 for psprocess's model tests (make-model.sh runs it): what no Score-P
// profile here holds.
//   tau.cubex   a TAU_ATOMIC metric (count, min, max, sum, sum of squares per value, a count of 0 too) beside a
//               DOUBLE one, and attributes on a metric, a region, a call path and the system tree
//   aggr.cubex  derived metrics with CubePL aggregation operators (<cubeplaggr>): a PREDERIVED_EXCLUSIVE one whose
//               call-tree "plus" and system-tree "aggr" take the greater value, a PREDERIVED_INCLUSIVE one with a
//               "minus", a POSTDERIVED one with an "aggr"
//   composite.cubex  RATE and COMPLEX metrics (two numbers per value each)
// Usage: model_cubes DIRECTORY
// Build: $(cubelib-config --cxx) $(cubelib-config --cppflags) model_cubes.cpp
//        $(cubelib-config --ldflags) $(cubelib-config --libs)
#include <Cube.h>
#include <CubeComplexValue.h>
#include <CubeRateValue.h>
#include <CubeTauAtomicValue.h>
#include <cstdio>
#include <exception>
#include <string>

static void
tau( const std::string& dir )
{
    cube::Cube cube;
    cube.def_attr( "origin", "model_cubes.cpp" );
    cube::Metric* time = cube.def_met( "Time", "time", "DOUBLE", "sec", "", "", "time", NULL );
    cube::Metric* atom = cube.def_met( "Message size", "msgsize", "TAU_ATOMIC", "bytes", "", "",
                                       "sizes of the messages sent", NULL );
    atom->def_attr( "kind", "atomic event" );
    cube::Region* main_r = cube.def_region( "main", "main", "user", "function", 1, 20, "", "", "a.c" );
    cube::Region* send_r = cube.def_region( "send", "send", "user", "function", 21, 30, "", "", "a.c" );
    main_r->def_attr( "region note", "the program" );
    cube::Cnode* main_c = cube.def_cnode( main_r, "a.c", 1, NULL );
    cube::Cnode* send_c = cube.def_cnode( send_r, "a.c", 5, main_c );
    cube::Cnode* again  = cube.def_cnode( send_r, "a.c", 9, main_c );
    send_c->def_attr( "call note", "first send" );
    cube::Machine* mach = cube.def_mach( "machine", "" );
    mach->def_attr( "platform", "test" );
    cube::Node*    node = cube.def_node( "node", mach );
    cube::Process* p0   = cube.def_proc( "rank 0", 0, node );
    cube::Process* p1   = cube.def_proc( "rank 1", 1, node );
    cube::Thread*  t0   = cube.def_thrd( "thread 0", 0, p0 );
    cube::Thread*  t1   = cube.def_thrd( "thread 0", 0, p1 );
    t1->def_attr( "thread note", "the other rank" );
    cube.initialize();
    cube.set_sev( time, main_c, t0, 1.5 );
    cube.set_sev( time, main_c, t1, 1.25 );
    cube.set_sev( time, send_c, t0, 0.5 );
    cube.set_sev( time, again, t1, 0.75 );
    // (n, min, max, sum, sum2): means 341.33.., 1024, 0 (n = 0), 0.1 / 3
    cube.set_sev( atom, send_c, t0, new cube::TauAtomicValue( 3, 0, 1000, 1024, 1000024 ) );
    cube.set_sev( atom, send_c, t1, new cube::TauAtomicValue( 1, 1024, 1024, 1024, 1048576 ) );
    cube.set_sev( atom, again, t0, new cube::TauAtomicValue( 0, 0, 0, 0, 0 ) );
    cube.set_sev( atom, again, t1, new cube::TauAtomicValue( 3, 0, 0.1, 0.1, 0.01 ) );
    cube.writeCubeReport( dir + "/tau" );
}

static void
aggr( const std::string& dir )
{
    cube::Cube cube;
    cube::Metric* time = cube.def_met( "Time", "time", "DOUBLE", "sec", "", "", "time", NULL );
    cube::Metric* visits = cube.def_met( "Visits", "visits", "UINT64", "occ", "", "", "visits", NULL );
    cube.def_met( "Greatest time", "max_like", "DOUBLE", "sec", "", "", "prederived exclusive, max operators", NULL,
                  cube::CUBE_METRIC_PREDERIVED_EXCLUSIVE, "metric::time(e)", "", "max(arg1, arg2)", "",
                  "max(arg1, arg2)" );
    cube.def_met( "Time less twice", "minus_like", "DOUBLE", "sec", "", "", "prederived inclusive, a minus", NULL,
                  cube::CUBE_METRIC_PREDERIVED_INCLUSIVE, "metric::time(i)", "", "", "arg1 - 2 * arg2", "" );
    cube.def_met( "Time per visit", "per_visit", "DOUBLE", "sec", "", "", "postderived, max over locations",
                  NULL, cube::CUBE_METRIC_POSTDERIVED, "metric::time() / metric::visits()", "", "", "",
                  "max(arg1, arg2)" );
    cube::Region* main_r = cube.def_region( "main", "main", "user", "function", 1, 20, "", "", "a.c" );
    cube::Region* work_r = cube.def_region( "work", "work", "user", "function", 21, 30, "", "", "a.c" );
    cube::Region* leaf_r = cube.def_region( "leaf", "leaf", "user", "function", 31, 40, "", "", "a.c" );
    cube::Cnode* main_c = cube.def_cnode( main_r, "a.c", 1, NULL );
    cube::Cnode* w1     = cube.def_cnode( work_r, "a.c", 5, main_c );
    cube::Cnode* w2     = cube.def_cnode( work_r, "a.c", 9, main_c );
    cube::Cnode* leaf   = cube.def_cnode( leaf_r, "a.c", 25, w1 );
    cube::Machine* mach = cube.def_mach( "machine", "" );
    cube::Node*    node = cube.def_node( "node", mach );
    cube::Thread*  t[ 3 ];
    for ( int r = 0; r < 3; ++r )
    {
        t[ r ] = cube.def_thrd( "thread 0", 0, cube.def_proc( "rank " + std::to_string( r ), r, node ) );
    }
    cube.initialize();
    cube::Cnode* cn[ 4 ] = { main_c, w1, w2, leaf };
    for ( int c = 0; c < 4; ++c )
    {
        for ( int r = 0; r < 3; ++r )
        {
            cube.set_sev( time, cn[ c ], t[ r ], 0.25 * ( ( c * 7 + r * 5 ) % 11 ) + 0.125 * c );
            cube.set_sev( visits, cn[ c ], t[ r ], 1 + ( c + 2 * r ) % 4 );
        }
    }
    cube.writeCubeReport( dir + "/aggr" );
}

static void
composite( const std::string& dir )
{
    cube::Cube cube;
    cube::Metric* rate = cube.def_met( "Bandwidth", "bandwidth", "RATE", "bytes/sec", "", "", "bytes / seconds", NULL );
    cube::Metric* cplx = cube.def_met( "Amplitude", "amplitude", "COMPLEX", "occ", "", "", "re, im", NULL );
    cube::Region* main_r = cube.def_region( "main", "main", "user", "function", 1, 20, "", "", "a.c" );
    cube::Region* send_r = cube.def_region( "send", "send", "user", "function", 21, 30, "", "", "a.c" );
    cube::Cnode* main_c = cube.def_cnode( main_r, "a.c", 1, NULL );
    cube::Cnode* send_c = cube.def_cnode( send_r, "a.c", 5, main_c );
    cube::Node*    node = cube.def_node( "node", cube.def_mach( "machine", "" ) );
    cube::Thread*  t0   = cube.def_thrd( "thread 0", 0, cube.def_proc( "rank 0", 0, node ) );
    cube::Thread*  t1   = cube.def_thrd( "thread 0", 0, cube.def_proc( "rank 1", 1, node ) );
    cube.initialize();
    cube.set_sev( rate, main_c, t0, new cube::RateValue( 100., 2. ) );
    cube.set_sev( rate, main_c, t1, new cube::RateValue( 30., 0.5 ) );
    cube.set_sev( rate, send_c, t0, new cube::RateValue( 1000., 0.25 ) );
    cube.set_sev( rate, send_c, t1, new cube::RateValue( 10., 4. ) );
    cube.set_sev( cplx, main_c, t0, new cube::ComplexValue( 3., 4. ) );
    cube.set_sev( cplx, main_c, t1, new cube::ComplexValue( -3., 1. ) );
    cube.set_sev( cplx, send_c, t0, new cube::ComplexValue( 1., -2. ) );
    cube.set_sev( cplx, send_c, t1, new cube::ComplexValue( 0.5, 0.25 ) );
    cube.writeCubeReport( dir + "/composite" );
}

int
main( int argc, char** argv )
{
    if ( argc != 2 )
    {
        std::fprintf( stderr, "usage: model_cubes DIRECTORY\n" );
        return 2;
    }
    try
    {
        tau( argv[ 1 ] );
        aggr( argv[ 1 ] );
        composite( argv[ 1 ] );
    }
    catch ( const std::exception& e )
    {
        std::fprintf( stderr, "model_cubes: %s\n", e.what() );
        return 1;
    }
    return 0;
}
