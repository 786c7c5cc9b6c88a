// Prints every value of a cube as CubeLib itself computes it, with full precision (cube_dump prints about six
// significant digits), for psprocess's tests. For each metric (in the cube's order), the metric tree inclusive
// and exclusive, the call tree inclusive and exclusive, each call path (cnode id) and each location (id), plus
// the aggregate over all locations ("all"), one tab-separated line; lines whose value is exactly 0 are left
// out (about half of them; the files are committed):
//     metric_tree  call_tree  metric  cnode  location  value
// The values are CubeLib's own Cube::get_sev with CUBE_CALCULATE_INCLUSIVE/EXCLUSIVE, printed with %.17g.
// With NAME:EXPR arguments after the cube, it defines each CubePL expression as a POSTDERIVED metric the way
// cube_dump -m NAME:EXPR does, and prints only those metrics.
// Build: $(cubelib-config --cxx) $(cubelib-config --cppflags) cube_values.cpp
//        $(cubelib-config --ldflags) $(cubelib-config --libs)
#include <Cube.h>
#include <CubeCnode.h>
#include <CubeLocation.h>
#include <CubeMetric.h>
#include <CubePLDriver.h>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int
main( int argc, char** argv )
{
    if ( argc < 2 )
    {
        std::fprintf( stderr, "usage: cube_values CUBE.cubex [NAME:EXPR]... > values.tsv\n" );
        return 2;
    }
    try
    {
        cube::Cube cube;
        cube.openCubeReport( argv[ 1 ] );
        std::vector< cube::Metric* > metrics = cube.get_metv();
        if ( argc > 2 )
        {
            metrics.clear();
            for ( int i = 2; i < argc; ++i )
            {
                const std::string arg   = argv[ i ];
                const size_t      colon = arg.find( ':' );
                const std::string name  = arg.substr( 0, colon );
                const std::string expr  = colon == std::string::npos ? "" : arg.substr( colon + 1 );
                std::string       program = "<cubepl>" + expr + "</cubepl>";
                std::string       error;
                // the same test and definition as cube_dump's
                if ( colon == std::string::npos
                     || !cube.get_cubepl_driver()->test( program, error ) )
                {
                    std::fprintf( stderr, "cube_values: %s: not a NAME:EXPR CubePL expression: %s\n", argv[ i ],
                                  error.c_str() );
                    return 1;
                }
                metrics.push_back( cube.def_met( name, name, "DOUBLE", "", "", "", "", NULL,
                                                 cube::CUBE_METRIC_POSTDERIVED, expr, "" ) );
            }
        }
        const std::vector< cube::Cnode* >&    cnodes    = cube.get_cnodev();
        const std::vector< cube::Location* >& locations = cube.get_locationv();
        const cube::CalculationFlavour        flavours[ 2 ] = { cube::CUBE_CALCULATE_INCLUSIVE,
                                                                cube::CUBE_CALCULATE_EXCLUSIVE };
        const char* names[ 2 ] = { "incl", "excl" };
        std::printf( "metric_tree\tcall_tree\tmetric\tcnode\tlocation\tvalue\n" );
        for ( int x = 0; x < 2; ++x )
        {
            for ( int z = 0; z < 2; ++z )
            {
                for ( cube::Metric* m : metrics )
                {
                    const std::string name = m->get_uniq_name();
                    const char*       uniq = name.c_str();
                    for ( cube::Cnode* c : cnodes )
                    {
                        for ( cube::Location* l : locations )
                        {
                            double v = cube.get_sev( m, flavours[ x ], c, flavours[ z ], l,
                                                     cube::CUBE_CALCULATE_EXCLUSIVE );
                            if ( v != 0 )
                            {
                                std::printf( "%s\t%s\t%s\t%u\t%u\t%.17g\n", names[ x ], names[ z ], uniq,
                                             c->get_id(), l->get_id(), v );
                            }
                        }
                        double all = cube.get_sev( m, flavours[ x ], c, flavours[ z ] );
                        if ( all != 0 )
                        {
                            std::printf( "%s\t%s\t%s\t%u\tall\t%.17g\n", names[ x ], names[ z ], uniq,
                                         c->get_id(), all );
                        }
                    }
                }
            }
        }
    }
    catch ( const std::exception& e )
    {
        std::fprintf( stderr, "cube_values: %s: %s\n", argv[ 1 ], e.what() );
        return 1;
    }
    return 0;
}
