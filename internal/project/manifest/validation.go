package manifest

func parseValidation(root *object) Validation {
	v := Validation{Executables: []string{}, Files: []string{}}
	o := root.sub("validation")
	if o == nil {
		return v
	}
	o.forbid("commands", "validation.commands", "is not allowed for user projects: declare validation.executables and validation.files instead; checks that need to run code belong in the Dockerfile as RUN steps")
	o.rejectUnknown("executables", "files")
	if list, ok := o.strings("executables"); ok {
		v.Executables = pathList(o.c, "validation.executables", list, maxValidation, containerPath)
	}
	if list, ok := o.strings("files"); ok {
		v.Files = pathList(o.c, "validation.files", list, maxValidation, containerPath)
	}
	return v
}
