package skill

import "testing"

// TestViewerDescriptionIsAgentScopes: the viewer's description is 2.x
// SkillViewer's, word for word (TestViewerSchema compares the listing
// with the constant, so it would not see the constant change).
func TestViewerDescriptionIsAgentScopes(t *testing.T) {
	const want = "Retrieve a skill within the conversation. " +
		"When users asks you to perform tasks, check if any of the available " +
		"skills match. " +
		"Skills provide specialized capabilities and domain knowledge."
	if ViewerDescription != want {
		t.Errorf("ViewerDescription = %q\nwant %q", ViewerDescription, want)
	}
	if ViewerName != "Skill" {
		t.Errorf("ViewerName = %q, want Skill", ViewerName)
	}
}
