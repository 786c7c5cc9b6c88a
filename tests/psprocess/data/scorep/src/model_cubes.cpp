// Writes small cubes through libcube4 for psprocess's model tests (make-model.sh runs it): what no Score-P
// profile here holds.
//   tau.cubex   a TAU_ATOMIC metric (count, min, max, sum, sum of squares per value, a count of 0 too) beside a
//               DOUBLE one, and attributes on a metric, a region, a call path and the system tree
// Usage: model_cubes DIRECTORY
// Build: $(cubelib-config --cxx) $(cubelib-config --cppflags) model_cubes.cpp
//        $(cubelib-config --ldflags) $(cubelib-config --libs)
#include <Cube.h>
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
    }
    catch ( const std::exception& e )
    {
        std::fprintf( stderr, "model_cubes: %s\n", e.what() );
        return 1;
    }
    return 0;
}
