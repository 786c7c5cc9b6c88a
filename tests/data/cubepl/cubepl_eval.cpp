// Evaluates CubePL expressions with CubeLib itself: for each line
// "name<TAB>kind<TAB>expression" of a file (kind: post, pre_excl, pre_incl)
// defines a derived metric in the cube and prints, per call path and
// location, its exclusive and inclusive value at full precision, as CSV:
// name,cnode,location,excl,incl.  A line CubeLib's parser refuses prints
// name,error.  Before them, the cube itself for psuite's tests to rebuild
// (independently of psuite's reader): "region,id,name", "cnode,id,parent
// id (-1 for a root),region id", "location,id,name" and per stored metric
// "metric,name,dtype,kind" and its values "value,name,cnode,location,excl,
// incl", and per derived expression "total,name,value" (the whole
// experiment's value) before its values.  Built and run by make.sh; never part of psuite.
#include <Cube.h>
#include <CubeMetric.h>
#include <CubeCnode.h>
#include <CubeLocation.h>
#include <CubePLDriver.h>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>
#include <CubeRegion.h>

int main( int argc, char** argv )
{
    if ( argc != 3 )
    {
        std::cerr << "usage: cubepl_eval CUBE EXPRESSIONS\n";
        return 2;
    }
    cube::Cube c;
    c.openCubeReport( argv[ 1 ] );
    for ( cube::Region* r : c.get_regv() )
    {
        printf( "region,%u,%s\n", r->get_id(), r->get_name().c_str() );
    }
    for ( cube::Cnode* cn : c.get_cnodev() )
    {
        printf( "cnode,%u,%d,%u\n", cn->get_id(), cn->get_parent() ? ( int )cn->get_parent()->get_id() : -1,
                cn->get_callee()->get_id() );
    }
    for ( cube::Location* loc : c.get_locationv() )
    {
        printf( "location,%u,%s\n", loc->get_id(), loc->get_name().c_str() );
    }
    std::vector<cube::Metric*> stored( c.get_metv() );
    for ( cube::Metric* m : stored )
    {
        printf( "metric,%s,%s,%d\n", m->get_uniq_name().c_str(), m->get_dtype().c_str(), ( int )m->get_type_of_metric() );
        for ( cube::Cnode* cn : c.get_cnodev() )
        {
            for ( cube::Location* loc : c.get_locationv() )
            {
                double e = c.get_sev( m, cube::CUBE_CALCULATE_EXCLUSIVE, cn, cube::CUBE_CALCULATE_EXCLUSIVE, loc, cube::CUBE_CALCULATE_INCLUSIVE );
                double i = c.get_sev( m, cube::CUBE_CALCULATE_EXCLUSIVE, cn, cube::CUBE_CALCULATE_INCLUSIVE, loc, cube::CUBE_CALCULATE_INCLUSIVE );
                printf( "value,%s,%u,%u,%.17g,%.17g\n", m->get_uniq_name().c_str(), cn->get_id(), loc->get_id(), e, i );
            }
        }
    }
    std::ifstream in( argv[ 2 ] );
    std::string   line;
    while ( std::getline( in, line ) )
    {
        if ( line.empty() || line[ 0 ] == '#' )
        {
            continue;
        }
        size_t      t1   = line.find( '\t' ), t2 = line.find( '\t', t1 + 1 );
        std::string name = line.substr( 0, t1 ), kind = line.substr( t1 + 1, t2 - t1 - 1 ), expr = line.substr( t2 + 1 );
        std::string error, wrapped = "<cubepl>" + expr + "</cubepl>";
        if ( !c.get_cubepl_driver()->test( wrapped, error ) )
        {
            printf( "derived,%s,error\n", name.c_str() );
            continue;
        }
        cube::TypeOfMetric type = kind == "post" ? cube::CUBE_METRIC_POSTDERIVED
                                  : kind == "pre_excl" ? cube::CUBE_METRIC_PREDERIVED_EXCLUSIVE
                                  : cube::CUBE_METRIC_PREDERIVED_INCLUSIVE;
        cube::Metric* m = c.def_met( name, name, "DOUBLE", "", "", "", "", NULL, type, expr, "" );
        printf( "total,%s,%.17g\n", name.c_str(), c.get_sev( m, cube::CUBE_CALCULATE_INCLUSIVE ) );
        for ( cube::Cnode* cn : c.get_cnodev() )
        {
            for ( cube::Location* loc : c.get_locationv() )
            {
                double e = c.get_sev( m, cube::CUBE_CALCULATE_INCLUSIVE, cn, cube::CUBE_CALCULATE_EXCLUSIVE, loc, cube::CUBE_CALCULATE_INCLUSIVE );
                double i = c.get_sev( m, cube::CUBE_CALCULATE_INCLUSIVE, cn, cube::CUBE_CALCULATE_INCLUSIVE, loc, cube::CUBE_CALCULATE_INCLUSIVE );
                printf( "derived,%s,%u,%u,%.17g,%.17g\n", name.c_str(), cn->get_id(), loc->get_id(), e, i );
            }
        }
    }
    return 0;
}
