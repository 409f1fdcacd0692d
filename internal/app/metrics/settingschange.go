package metrics

// SettingsChanged counts one applied change of the live settings (SPEC
// OPS-7) by who made it: "api", "cli", "page" or "file" (the
// settings.Options.OnChange hook). The keys are not labels: the log line
// names them.
func (m *Metrics) SettingsChanged(by string, _ []string) {
	m.settingsChanges.WithLabelValues(by).Inc()
}
