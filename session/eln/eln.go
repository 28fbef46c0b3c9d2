package eln

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// File is one data file of the archive.
type File struct {
	Path        string // inside the root folder, slash-separated ("artifacts/raman_spectrum.jdx")
	Name        string // a short name ("raman_spectrum_jcamp")
	Type        string // MIME type
	Description string
	Data        []byte
	// Role says where the run puts it: "result" (produced), "input" (the
	// recipe, the task) or "" (the record: audit, session).
	Role string
}

// Person is an operator who acted on the run.
type Person struct {
	Name   string // display name
	OSUser string // the OS user the kernel reported
	UID    *uint32
	Role   string // what they did: "approved for execution", "released"
}

// Instrument is one instrument of the rig.
type Instrument struct {
	ID          string // the configuration's name ("raman", "mfc-ar")
	Kind        string // "spectrometer", "furnace controller", "mass-flow controller"
	Model       string // "" when the configuration does not know it
	Serial      string
	Description string // how it is reached ("serial /dev/ttyUSB0 115200 8N1")
}

// Recipe names the recipe the run followed.
type Recipe struct {
	Name, Version, SHA256 string
	File                  string // the recipe file's Path in the archive ("" when not included)
}

// Run is one session's record.
type Run struct {
	SessionID   string
	Title       string // "cvd-material-synthesis, session ..."
	Description string
	Capability  string
	Version     string // the capability version
	State       string // the session's final state (COMPLETED, FAILED, ...) or its current one
	DataClass   string
	Caller      string
	Start, End  time.Time // End zero while running
	Exported    time.Time
	Agent       string // "hcp-edge"
	AgentVer    string
	Rig         string // the rig's name
	Recipe      *Recipe
	Inputs      map[string]any
	// Intent is the caller's intent (L4 task_submit), as it wrote it.
	Intent string
	// Context is the caller's context (L4): why, and what it cites.
	Context     TaskContext
	Instruments []Instrument
	Operators   []Person
	Files       []File
}

// TaskContext is the context of a task_submit (L4): its purpose, its
// references (DOIs, URLs or other identifiers) and free-form notes.
type TaskContext struct {
	Purpose    string   `json:"purpose,omitempty"`
	References []string `json:"references,omitempty"`
	Notes      string   `json:"notes,omitempty"`
}

// ErrRun is a Run that cannot be written: no session id, a file path
// outside the root, named twice, or the metadata's own name.
var ErrRun = errors.New("eln: invalid run")

// MetadataFile is the RO-Crate metadata file at the top of the root folder.
const MetadataFile = "ro-crate-metadata.json"

// MIME is the media type of an .eln archive (a zip).
const MIME = "application/vnd.eln+zip"

// Profile URIs the crate conforms to.
const (
	ROCrate12      = "https://w3id.org/ro/crate/1.2"
	ProcessRun     = "https://w3id.org/ro/wfrun/process/0.5"
	contextROCrate = "https://w3id.org/ro/crate/1.2/context"
)

// Root is the root folder's name for a session.
func Root(sessionID string) string { return "hcp-edge-session-" + sessionID }

// Write writes r as an .eln archive (a zip) to w: the root folder, every
// File under it, and ro-crate-metadata.json describing them.
func Write(w io.Writer, r Run) error {
	if r.SessionID == "" || strings.ContainsAny(r.SessionID, "/\\") {
		return fmt.Errorf("%w: session id %q", ErrRun, r.SessionID)
	}
	seen := map[string]bool{MetadataFile: true}
	for _, f := range r.Files {
		p := path.Clean(f.Path)
		if p != f.Path || p == "." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") || seen[p] {
			return fmt.Errorf("%w: file path %q", ErrRun, f.Path)
		}
		seen[p] = true
	}
	meta, err := Metadata(r)
	if err != nil {
		return err
	}
	root := Root(r.SessionID)
	zw := zip.NewWriter(w)
	mod := r.Exported
	if mod.IsZero() {
		mod = time.Unix(0, 0)
	}
	add := func(name string, data []byte) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: root + "/" + name, Method: zip.Deflate, Modified: mod.UTC()})
		if err != nil {
			return err
		}
		_, err = fw.Write(data)
		return err
	}
	if _, err := zw.CreateHeader(&zip.FileHeader{Name: root + "/", Modified: mod.UTC()}); err != nil {
		return fmt.Errorf("eln: %w", err)
	}
	if err := add(MetadataFile, meta); err != nil {
		return fmt.Errorf("eln: %s: %w", MetadataFile, err)
	}
	for _, f := range r.Files {
		if err := add(f.Path, f.Data); err != nil {
			return fmt.Errorf("eln: %s: %w", f.Path, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("eln: %w", err)
	}
	return nil
}

type obj = map[string]any

func ref(id string) obj { return obj{"@id": id} }

// o builds an obj from key, value pairs: a call with a slice of pairs
// instead of a map literal, whose inline assignments were 15 kB of the
// armv7 binary for one JSON document written on request.
func o(kv ...any) obj {
	m := make(obj, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// Metadata returns r's ro-crate-metadata.json.
func Metadata(r Run) ([]byte, error) {
	runID := "#run-" + r.SessionID
	agentID := "#agent-hcp-edge"
	graph := []obj{o("@id", MetadataFile, "@type", "CreativeWork",
		"conformsTo", []obj{ref(ROCrate12), ref(ProcessRun)}, "about", ref("./"))}
	var parts, results, inputs []obj
	for _, f := range r.Files {
		sum := sha256.Sum256(f.Data)
		e := o("@id", f.Path, "@type", "File", "name", f.Name, "encodingFormat", f.Type,
			"contentSize", fmt.Sprint(len(f.Data)), "sha256", hex.EncodeToString(sum[:]))
		if f.Description != "" {
			e["description"] = f.Description
		}
		graph = append(graph, e)
		parts = append(parts, ref(f.Path))
		switch f.Role {
		case "result":
			results = append(results, ref(f.Path))
		case "input":
			inputs = append(inputs, ref(f.Path))
		}
	}
	status := "http://schema.org/CompletedActionStatus"
	if r.State != "COMPLETED" {
		status = "http://schema.org/FailedActionStatus"
	}
	action := o("@id", runID, "@type", "CreateAction", "name", r.Title,
		"description", r.Description, "actionStatus", ref(status),
		"agent", ref(agentID), "identifier", r.SessionID,
		"additionalType", "hcp-edge session "+r.State)
	if !r.Start.IsZero() {
		action["startTime"] = r.Start.UTC().Format(time.RFC3339Nano)
	}
	if !r.End.IsZero() {
		action["endTime"] = r.End.UTC().Format(time.RFC3339Nano)
	}
	var instr []obj
	if rc := r.Recipe; rc != nil {
		id := "#recipe-" + rc.Name + "-" + rc.Version
		if rc.File != "" {
			id = rc.File
		}
		e := o("@id", id, "@type", "SoftwareApplication", "name", rc.Name, "softwareVersion", rc.Version,
			"description", "hcp-edge process recipe (the session's pinned copy is identified by this sha256)", "sha256", rc.SHA256)
		if rc.File != "" {
			e["@type"] = []string{"File", "SoftwareApplication"}
			for _, g := range graph { // the File entry already written: merge
				if g["@id"] == rc.File {
					for k, v := range e {
						if k != "sha256" { // the file's own hash stands (the identity's, for the pinned file)
							g[k] = v
						}
					}
					e = nil
					break
				}
			}
		}
		if e != nil {
			graph = append(graph, e)
		}
		instr = append(instr, ref(id))
	}
	for _, in := range r.Instruments {
		id := "#instrument-" + in.ID
		e := o("@id", id, "@type", "IndividualProduct", "name", in.ID, "category", in.Kind)
		if in.Model != "" {
			e["model"] = in.Model
		}
		if in.Serial != "" {
			e["serialNumber"] = in.Serial
		}
		if in.Description != "" {
			e["description"] = in.Description
		}
		graph = append(graph, e)
		instr = append(instr, ref(id))
	}
	if len(instr) > 0 {
		action["instrument"] = instr
	}
	keys := make([]string, 0, len(r.Inputs))
	for k := range r.Inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		id := "#input-" + k
		v := r.Inputs[k]
		if b, err := json.Marshal(v); err == nil && len(b) > 0 && (b[0] == '{' || b[0] == '[') {
			v = string(b)
		}
		graph = append(graph, o("@id", id, "@type", "PropertyValue", "name", k, "value", v))
		inputs = append(inputs, ref(id))
	}
	if len(inputs) > 0 {
		action["object"] = inputs
	}
	if len(results) > 0 {
		action["result"] = results
	}
	var people []obj
	for i, p := range r.Operators {
		id := fmt.Sprintf("#operator-%d", i+1)
		e := o("@id", id, "@type", "Person", "name", p.Name)
		if p.OSUser != "" {
			e["alternateName"] = p.OSUser
		}
		if p.UID != nil {
			e["identifier"] = fmt.Sprintf("uid %d", *p.UID)
		}
		if p.Role != "" {
			e["description"] = p.Role
		}
		graph = append(graph, e)
		people = append(people, ref(id))
	}
	if len(people) > 0 {
		action["participant"] = people
	}
	graph = append(graph, action, o("@id", agentID, "@type", "SoftwareApplication", "name", r.Agent, "softwareVersion", r.AgentVer,
		"url", "https://hcp-edge"))
	rootDS := o("@id", "./", "@type", "Dataset", "name", r.Title, "description", r.Description,
		"identifier", r.SessionID, "hasPart", parts, "mentions", ref(runID),
		"license", ref("https://spdx.org/licenses/CC-BY-4.0"), "keywords", strings.Join(nonEmpty(r.Capability, r.DataClass, r.Rig, "hcp-edge"), ", "))
	graph = append(graph, callerContext(r, rootDS, action)...)
	published := r.Exported // RO-Crate requires it: the export, else the run's end, else its start
	for _, t := range []time.Time{r.End, r.Start} {
		if published.IsZero() {
			published = t
		}
	}
	if !published.IsZero() {
		rootDS["datePublished"] = published.UTC().Format(time.RFC3339)
	}
	graph = append([]obj{graph[0], rootDS}, graph[1:]...)
	graph = append(graph, o("@id", "https://spdx.org/licenses/CC-BY-4.0", "@type", "CreativeWork", "name", "CC BY 4.0"))
	b, err := json.MarshalIndent(o("@context", contextROCrate, "@graph", graph), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("eln: metadata: %w", err)
	}
	return b, nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// callerContext records the caller's intent and context: the intent as the
// run's disambiguatingDescription, the purpose and notes as the crate's
// abstract, each reference as a cited entity (a DOI by its doi.org URL, a
// URL as itself, anything else by name). It returns the entities to add.
func callerContext(r Run, rootDS, action obj) []obj {
	if r.Intent != "" {
		action["disambiguatingDescription"] = r.Intent
	}
	c := r.Context
	var abs []string
	if c.Purpose != "" {
		abs = append(abs, "Purpose: "+c.Purpose)
	}
	if c.Notes != "" {
		abs = append(abs, "Notes: "+c.Notes)
	}
	if len(abs) > 0 {
		rootDS["abstract"] = strings.Join(abs, "\n")
	}
	var out, cites []obj
	for i, ref := range c.References {
		var id string
		switch {
		case strings.HasPrefix(strings.ToLower(ref), "doi:"):
			id = "https://doi.org/" + strings.TrimSpace(ref[4:])
		case strings.HasPrefix(ref, "https://"), strings.HasPrefix(ref, "http://"):
			id = ref
		default:
			id = "#reference-" + strconv.Itoa(i+1)
		}
		out = append(out, o("@id", id, "@type", "CreativeWork", "name", ref))
		cites = append(cites, o("@id", id))
	}
	if len(cites) > 0 {
		rootDS["citation"] = cites
	}
	return out
}
