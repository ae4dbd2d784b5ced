package protocol

// reqKind says how a request's reply is rendered once its ops have run.
type reqKind uint8

const (
	rStatic     reqKind = iota // reply is req.text (possibly empty); ops, if any, run for their effect
	rGet                       // text get, gets, gat, gats (one chunk of a multi-get)
	rStore                     // text set, add, replace, append, prepend, cas
	rDelete                    // text delete
	rArith                     // text incr, decr
	rTouch                     // text touch
	rStats                     // text stats
	rMetaGet                   // mg
	rMetaSet                   // ms
	rMetaDelete                // md
	rMetaArith                 // ma
	rMetaDebug                 // me
	rBin                       // a binary request
	rBinStats                  // binary stat
	rCacheDump                 // stats cachedump: class in op, limit in nops
	rMetaDump                  // lru_crawler metadump: the class ids in args (nil: all)
)

// request is one request's reply slot in a round: replies are rendered in
// request order after the round's batch has run.
type request struct {
	kind  reqKind
	quiet bool  // text noreply, meta q, binary quiet opcode
	op    int32 // index of its (first) op in the batch; -1: none
	nops  int32 // number of ops (multi-get chunk)
	peek  int32 // meta: index of a Peek Get run just before op; -1: none
	viv   int32 // mg N: index of the Add that creates a missing item; -1: none
	text  string
	args  []byte // meta: the command line; stats: the group (points into the read buffer); metadump: class ids
	meta  metaFlags

	// text get
	withCAS, final, discard bool

	// binary
	opcode  uint8
	base    uint8 // opcode with the quiet variant folded into the loud one
	opaque  uint32
	status  uint16 // static binary error (text holds its message)
	withKey bool   // getk, gatk: the key is returned
}

func newRequest(kind reqKind) request {
	return request{kind: kind, op: -1, peek: -1, viv: -1}
}

// cmd identifies a command for the per-command counters of ConnStats.
type cmd uint8

const (
	cmdGet cmd = iota
	cmdGets
	cmdGat
	cmdGats
	cmdSet
	cmdAdd
	cmdReplace
	cmdAppend
	cmdPrepend
	cmdCAS
	cmdDelete
	cmdIncr
	cmdDecr
	cmdTouch
	cmdFlush
	cmdVersion
	cmdVerbosity
	cmdStats
	cmdQuit
	cmdMetaGet
	cmdMetaSet
	cmdMetaDelete
	cmdMetaArith
	cmdMetaNoop
	cmdMetaDebug
	cmdNoop
	cmdOther // admin commands warpkv answers without acting (shutdown, slabs, ...)
	cmdError // unknown or malformed requests
	numCmds
)

var cmdNames = [numCmds]string{
	"get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend", "cas",
	"delete", "incr", "decr", "touch", "flush_all", "version", "verbosity", "stats", "quit",
	"mg", "ms", "md", "ma", "mn", "me", "noop", "other", "error",
}
