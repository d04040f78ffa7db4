// Package all is the one registration file: importing it registers every transport lockstep
// ships (transport.Register in each plugin's init). Add a transport here and nowhere else.
package all

import (
	_ "github.com/lockstepsim/lockstep/transport/ib/ibnic"     // transport.kind ib
	_ "github.com/lockstepsim/lockstep/transport/mrc/mrcnic"   // transport.kind mrc
	_ "github.com/lockstepsim/lockstep/transport/roce/rocenic" // transport.kind roce
	_ "github.com/lockstepsim/lockstep/transport/uec/uecnic"   // transport.kind uec
)
