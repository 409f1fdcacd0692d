package contrib

import (
	"encoding/xml"
	"errors"
	"io"
	"path"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// plistValue is a parsed property-list value: a string, bool, int (as its text), array or dict.
type plistValue struct {
	kind  string // "string", "true", "false", "integer", "array", "dict"
	text  string
	items []plistValue
	dict  map[string]plistValue
}

// parsePlist parses an XML property list (plist version 1.0) into its top-level value; it
// fails on anything that is not well-formed XML or not a plist.
func parsePlist(data string) (plistValue, error) {
	d := xml.NewDecoder(strings.NewReader(data))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err != nil {
			return plistValue{}, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "plist" {
				return plistValue{}, errors.New("root element is not plist")
			}
			v, err := plistNext(d)
			if err != nil {
				return v, err
			}
			for { // the rest must be well-formed too
				if _, err := d.Token(); err == io.EOF {
					return v, nil
				} else if err != nil {
					return v, err
				}
			}
		}
	}
}

// plistNext reads the next value element.
func plistNext(d *xml.Decoder) (plistValue, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return plistValue{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return plistElement(d, t)
		case xml.EndElement:
			return plistValue{kind: "end"}, nil
		}
	}
}

func plistElement(d *xml.Decoder, se xml.StartElement) (plistValue, error) {
	v := plistValue{kind: se.Name.Local}
	switch v.kind {
	case "string", "integer", "key":
		var s string
		if err := d.DecodeElement(&s, &se); err != nil {
			return v, err
		}
		v.text = s
	case "true", "false":
		if err := d.Skip(); err != nil {
			return v, err
		}
	case "array":
		for {
			item, err := plistNext(d)
			if err != nil || item.kind == "end" {
				return v, err
			}
			v.items = append(v.items, item)
		}
	case "dict":
		v.dict = map[string]plistValue{}
		for {
			k, err := plistNext(d)
			if err != nil || k.kind == "end" {
				return v, err
			}
			if k.kind != "key" {
				return v, errors.New("dict entry without a key")
			}
			val, err := plistNext(d)
			if err != nil {
				return v, err
			}
			if val.kind == "end" || val.kind == "key" {
				return v, errors.New("key " + k.text + " without a value")
			}
			v.dict[k.text] = val
		}
	default:
		return v, errors.New("unknown plist element " + v.kind)
	}
	return v, nil
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := Files.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLaunchdAgent(t *testing.T) {
	const home = "/Users/alice"
	raw := read(t, "com.github.dual-proxy.plist")
	rendered := strings.ReplaceAll(raw, "HOME_DIR", home) // the install step's sed
	p, err := parsePlist(rendered)
	if err != nil {
		t.Fatalf("PLAT-4: the plist is no well-formed property list: %v", err)
	}
	t.Run("PLAT-4/launchd-plist-has-the-keys-launchd-needs", func(t *testing.T) {
		if p.kind != "dict" {
			t.Fatalf("top-level %s, want dict", p.kind)
		}
		if l := p.dict["Label"]; l.kind != "string" || l.text+".plist" != "com.github.dual-proxy.plist" {
			t.Fatalf("Label %+v: want a string naming the file (launchd's convention)", l)
		}
		args := p.dict["ProgramArguments"]
		if args.kind != "array" || len(args.items) == 0 || args.items[0].kind != "string" {
			t.Fatalf("ProgramArguments %+v: want an array of strings", args)
		}
		if prog := args.items[0].text; prog != home+"/.local/bin/dual-proxy" {
			t.Fatalf("program %q: want the absolute path the README installs to (launchd expands no ~)", prog)
		}
		if v := p.dict["RunAtLoad"]; v.kind != "true" {
			t.Fatalf("RunAtLoad %+v, want true (start at login)", v)
		}
		ka := p.dict["KeepAlive"]
		if ka.kind != "dict" || ka.dict["SuccessfulExit"].kind != "false" {
			t.Fatalf("KeepAlive %+v: want a restart after a failed exit", ka)
		}
		for _, k := range []string{"StandardOutPath", "StandardErrorPath"} {
			if v := p.dict[k]; v.kind != "string" || v.text != home+"/Library/Logs/dual-proxy/dual-proxy.log" {
				t.Fatalf("%s %+v: want macOS's log directory ~/Library/Logs/dual-proxy", k, v)
			}
		}
		if env := p.dict["EnvironmentVariables"]; env.kind != "dict" {
			t.Fatalf("EnvironmentVariables %+v: want a dict for the flags' variables", env)
		}
	})
	t.Run("PLAT-4/launchd-plist-install-leaves-no-placeholder-or-tilde", func(t *testing.T) {
		if strings.Contains(rendered, "HOME_DIR") {
			t.Fatal("HOME_DIR left after the install step's replacement")
		}
		for k, v := range p.dict {
			if v.kind == "string" && strings.HasPrefix(v.text, "~") {
				t.Fatalf("%s is %q: launchd does not expand ~", k, v.text)
			}
		}
		if !strings.Contains(raw, `sed "s|HOME_DIR|$HOME|g"`) {
			t.Fatal("the file's install steps no longer name the replacement the test renders")
		}
	})
	t.Run("PLAT-4/launchd-plist-refuses-a-broken-file", func(t *testing.T) {
		// The parser is strict enough to catch what plutil -lint would: a key without a value.
		broken := strings.Replace(rendered, "<true/>", "", 1)
		if _, err := parsePlist(broken); err == nil {
			t.Fatal("a key without a value parsed")
		}
	})
}

// task is the part of a Task Scheduler task definition (schema
// http://schemas.microsoft.com/windows/2004/02/mit/task) the logon task relies on.
type task struct {
	XMLName  xml.Name `xml:"http://schemas.microsoft.com/windows/2004/02/mit/task Task"`
	Version  string   `xml:"version,attr"`
	Triggers struct {
		Logon []struct {
			Enabled string `xml:"Enabled"`
			UserID  string `xml:"UserId"`
		} `xml:"LogonTrigger"`
	} `xml:"Triggers"`
	Principals struct {
		Principal []struct {
			ID        string `xml:"id,attr"`
			UserID    string `xml:"UserId"`
			LogonType string `xml:"LogonType"`
			RunLevel  string `xml:"RunLevel"`
		} `xml:"Principal"`
	} `xml:"Principals"`
	Settings struct {
		ExecutionTimeLimit string `xml:"ExecutionTimeLimit"`
		MultipleInstances  string `xml:"MultipleInstancesPolicy"`
		Restart            struct {
			Interval string `xml:"Interval"`
			Count    int    `xml:"Count"`
		} `xml:"RestartOnFailure"`
		StopIfGoingOnBatteries string `xml:"StopIfGoingOnBatteries"`
	} `xml:"Settings"`
	Actions struct {
		Context string `xml:"Context,attr"`
		Exec    []struct {
			Command   string `xml:"Command"`
			Arguments string `xml:"Arguments"`
		} `xml:"Exec"`
	} `xml:"Actions"`
}

func TestWindowsLogonTask(t *testing.T) {
	const user = `DESKTOP-1\alice`
	raw := read(t, "dual-proxy-task.xml")
	rendered := strings.ReplaceAll(raw, "USER_ID", user) // the install step's .Replace
	var tk task
	d := xml.NewDecoder(strings.NewReader(rendered))
	d.Strict = true
	if err := d.Decode(&tk); err != nil {
		t.Fatalf("PLAT-4: the task XML does not parse: %v", err)
	}
	t.Run("PLAT-4/windows-task-starts-at-the-users-logon", func(t *testing.T) {
		if tk.Version != "1.2" {
			t.Fatalf("task version %q, want 1.2 (Windows 7 and later)", tk.Version)
		}
		if len(tk.Triggers.Logon) != 1 || tk.Triggers.Logon[0].UserID != user || tk.Triggers.Logon[0].Enabled != "true" {
			t.Fatalf("logon triggers %+v: want one, enabled, for %s only", tk.Triggers.Logon, user)
		}
		if len(tk.Principals.Principal) != 1 {
			t.Fatalf("principals %+v", tk.Principals.Principal)
		}
		pr := tk.Principals.Principal[0]
		if pr.UserID != user || pr.LogonType != "InteractiveToken" || pr.RunLevel != "LeastPrivilege" || pr.ID != tk.Actions.Context {
			t.Fatalf("principal %+v (actions' context %q): want the user's own session, no elevation", pr, tk.Actions.Context)
		}
	})
	t.Run("PLAT-4/windows-task-runs-the-proxy-all-day", func(t *testing.T) {
		if len(tk.Actions.Exec) != 1 {
			t.Fatalf("actions %+v", tk.Actions.Exec)
		}
		cmd := tk.Actions.Exec[0].Command
		if cmd != `%LocalAppData%\Programs\dual-proxy\dual-proxy.exe` || path.Ext(strings.ReplaceAll(cmd, `\`, "/")) != ".exe" {
			t.Fatalf("command %q: want dual-proxy.exe where the README installs it", cmd)
		}
		s := tk.Settings
		if s.ExecutionTimeLimit != "PT0S" || s.MultipleInstances != "IgnoreNew" || s.StopIfGoingOnBatteries != "false" {
			t.Fatalf("settings %+v: want no time limit, one instance, not stopped on battery", s)
		}
		if s.Restart.Interval == "" || s.Restart.Count < 1 {
			t.Fatalf("restart on failure %+v", s.Restart)
		}
		if strings.Contains(rendered, "USER_ID") {
			t.Fatal("USER_ID left after the install step's replacement")
		}
		if !strings.Contains(raw, `.Replace('USER_ID', "$env:USERDOMAIN\$env:USERNAME")`) {
			t.Fatal("the file's install steps no longer name the replacement the test renders")
		}
	})
}
