// Package jsonscan is the pool's one JSON scanner over raw bytes (SPEC
// POOL-17, POOL-21): it finds value boundaries, validates exactly as
// json.Valid does, and walks object members and array elements without
// allocating, so a request body of MiBs of prompt strings is read in place
// and in one pass, never copied. pool/api reads client requests and
// stream events with it, its codecs decode valid bodies with it.
//
// Two families: the Skip functions and EachMember/EachElement trust their
// input only as far as they need and report -1 / false on malformed input,
// never panicking; the Valid functions check every byte as encoding/json's
// scanner does (FuzzValid holds them to json.Valid). Offsets are byte
// indexes into the slice given.
package jsonscan
