package resp

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeCommands are the commands the README's "Redis commands" section
// lists as supported, upper case, subcommands as "CLIENT LIST".
func readmeCommands(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Redis commands\n")
	if !ok {
		t.Fatal(`README.md has no "## Redis commands" section`)
	}
	_, supported, ok := strings.Cut(section, "\nSupported:\n")
	supported, _, ok2 := strings.Cut(supported, "\nNot supported")
	if !ok || !ok2 {
		t.Fatal(`README.md's "Redis commands" section lacks its "Supported:" or "Not supported" part`)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Z][A-Z.]*(?: [A-Z]+)?)`").FindAllStringSubmatch(supported, -1) {
		listed[m[1]] = true
	}
	return listed
}

// readmeName is how the README names a command or subcommand.
func readmeName(spec *CommandSpec) string {
	return strings.ToUpper(strings.ReplaceAll(spec.Name, "|", " "))
}

// Every command and subcommand memgest serves is in the README's list of
// supported commands.
func TestReadmeListsEveryCommand(t *testing.T) {
	listed := readmeCommands(t)
	var walk func([]*CommandSpec)
	walk = func(specs []*CommandSpec) {
		for _, s := range specs {
			if !listed[readmeName(s)] && !anyListed(listed, s.Subcommands) {
				t.Errorf("%s is served but not listed in README.md's \"Redis commands\"", readmeName(s))
			}
			walk(s.Subcommands)
		}
	}
	walk(Commands())
}

// anyListed says whether one of a container's subcommands is listed,
// which lists the container ("CLIENT LIST" lists CLIENT).
func anyListed(listed map[string]bool, subs []*CommandSpec) bool {
	return slices.ContainsFunc(subs, func(s *CommandSpec) bool { return listed[readmeName(s)] })
}

// Every command the README lists as supported is served.
func TestReadmeCommandsAreServed(t *testing.T) {
	served := map[string]bool{}
	var walk func([]*CommandSpec)
	walk = func(specs []*CommandSpec) {
		for _, s := range specs {
			served[readmeName(s)] = true
			walk(s.Subcommands)
		}
	}
	walk(Commands())
	var missing []string
	for name := range readmeCommands(t) {
		if !served[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("README.md lists commands memgest does not serve: %v", missing)
	}
}
