// Package wirefmt is the byte level under every wire API: the Server-Sent
// Events reader and sniffer, the Content-Encoding decoder, reading a body
// within a limit, the top-level JSON key guard and splice, the one-scan JSON
// decoders and appenders the codecs use instead of encoding/json on the hot
// path. It knows no API.
package wirefmt
