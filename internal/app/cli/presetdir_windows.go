package cli

// geminiTrusts reports whether Gemini CLI reads the system settings file at
// p. On Windows it checks the ACLs of the file and the directories above it
// for write access by non-administrators; the preset's directory under
// %LocalAppData% is the user's own, which is taken as passing (not tried
// with the real CLI on Windows).
func geminiTrusts(string) bool { return true }
