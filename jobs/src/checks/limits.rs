//! The size limits of what a job change may carry, one set for every front door (the
//! CLI, both HTTP route families and the MCP tool reach them through the lifecycle),
//! and no control, invisible or bidi-control characters in a one-line field (a CR LF in
//! an email target would add a mail header; an escape sequence in a name would reach a
//! terminal; a right-to-left override would make a name read as something else).
//! Only values a request gives are measured: a stored job written by another program
//! is never refused for what it already holds. Name and prompt keep Python Hermes' API
//! limits and wording; the others bound what no real job needs, so one request can no
//! longer grow jobs.json by a megabyte.

use crate::lifecycle::{JobEdit, JobError, NewJob};

/// Characters of a job name (Python Hermes' API limit).
pub const MAX_NAME_CHARS: usize = 200;
/// Characters of a prompt (Python Hermes' API limit).
pub const MAX_PROMPT_CHARS: usize = 5000;
/// Characters of a schedule: the longest real cron expression is far shorter.
pub const MAX_SCHEDULE_CHARS: usize = 256;
/// Characters of a `deliver` or `failure_deliver` value (a comma-separated list of targets).
pub const MAX_DELIVER_CHARS: usize = 1000;
/// Skills one job loads.
pub const MAX_SKILLS: usize = 50;
/// Characters of one skill name, a model or provider name, a reasoning effort.
pub const MAX_IDENTIFIER_CHARS: usize = 200;
/// Characters of a path (script, monitor script, interpreter, workdir), a monitor URL,
/// an origin or a pause reason.
pub const MAX_PATH_CHARS: usize = 1024;

/// One text field of a request: its name as the user gives it, its limit, and whether
/// it is one line (every field but the prompt).
struct TextLimit {
    field: &'static str,
    max_chars: usize,
    one_line: bool,
}

/// `after`'s job reference: an id or a name.
const AFTER: TextLimit = TextLimit {
    field: "After",
    max_chars: MAX_NAME_CHARS,
    one_line: true,
};
const AFTER_ON: TextLimit = TextLimit {
    field: "On",
    max_chars: MAX_IDENTIFIER_CHARS,
    one_line: true,
};
/// Where `redeliver --to` sends a run again: a `deliver` value.
const REDELIVER_TO: TextLimit = TextLimit {
    field: "--to",
    max_chars: MAX_DELIVER_CHARS,
    one_line: true,
};
const NAME: TextLimit = TextLimit {
    field: "Name",
    max_chars: MAX_NAME_CHARS,
    one_line: true,
};
const PROMPT: TextLimit = TextLimit {
    field: "Prompt",
    max_chars: MAX_PROMPT_CHARS,
    one_line: false,
};
const SCHEDULE: TextLimit = TextLimit {
    field: "Schedule",
    max_chars: MAX_SCHEDULE_CHARS,
    one_line: true,
};
const DELIVER: TextLimit = TextLimit {
    field: "Deliver",
    max_chars: MAX_DELIVER_CHARS,
    one_line: true,
};
const SKILL: TextLimit = TextLimit {
    field: "Each skill name",
    max_chars: MAX_IDENTIFIER_CHARS,
    one_line: true,
};
const MODEL: TextLimit = TextLimit {
    field: "Model",
    max_chars: MAX_IDENTIFIER_CHARS,
    one_line: true,
};
const PROVIDER: TextLimit = TextLimit {
    field: "Provider",
    max_chars: MAX_IDENTIFIER_CHARS,
    one_line: true,
};
const TIMEZONE: TextLimit = TextLimit {
    field: "Timezone",
    max_chars: MAX_IDENTIFIER_CHARS,
    one_line: true,
};
const REPEAT: TextLimit = TextLimit {
    field: "Repeat",
    max_chars: MAX_IDENTIFIER_CHARS,
    one_line: true,
};
const SCRIPT: TextLimit = TextLimit {
    field: "Script",
    max_chars: MAX_PATH_CHARS,
    one_line: true,
};
const WORKDIR: TextLimit = TextLimit {
    field: "Workdir",
    max_chars: MAX_PATH_CHARS,
    one_line: true,
};
const ORIGIN: TextLimit = TextLimit {
    field: "Origin",
    max_chars: MAX_PATH_CHARS,
    one_line: true,
};
const REASON: TextLimit = TextLimit {
    field: "Reason",
    max_chars: MAX_PATH_CHARS,
    one_line: true,
};
const FAILURE_DELIVER: TextLimit = TextLimit {
    field: "Failure deliver",
    max_chars: MAX_DELIVER_CHARS,
    one_line: true,
};
const MONITOR_SCRIPT: TextLimit = TextLimit {
    field: "Monitor script",
    max_chars: MAX_PATH_CHARS,
    one_line: true,
};
const MONITOR_URL: TextLimit = TextLimit {
    field: "Monitor URL",
    max_chars: MAX_PATH_CHARS,
    one_line: true,
};
const REASONING_EFFORT: TextLimit = TextLimit {
    field: "Reasoning effort",
    max_chars: MAX_IDENTIFIER_CHARS,
    one_line: true,
};
const INTERPRETER: TextLimit = TextLimit {
    field: "Interpreter",
    max_chars: MAX_PATH_CHARS,
    one_line: true,
};

impl TextLimit {
    fn check(&self, value: Option<&str>) -> Result<(), JobError> {
        let Some(text) = value else {
            return Ok(());
        };
        // Counting stops one past the limit: a megabyte is refused without walking it.
        if text.chars().nth(self.max_chars).is_some() {
            return Err(JobError::TooLong {
                field: self.field,
                max_chars: self.max_chars,
            });
        }
        if !self.one_line {
            return Ok(());
        }
        if let Some(control) = text.chars().find(|c| c.is_control()) {
            return Err(JobError::ControlCharacter {
                field: self.field,
                found: control,
            });
        }
        // The prompt's own check, with the marks and separators that matter on one line.
        match crate::checks::threats::first_hidden_in_line(text) {
            Some(found) => Err(JobError::HiddenCharacter {
                field: self.field,
                found,
            }),
            None => Ok(()),
        }
    }
}

fn check_skills<'a>(skills: impl IntoIterator<Item = &'a String>) -> Result<(), JobError> {
    let mut count = 0;
    for skill in skills {
        count += 1;
        if count > MAX_SKILLS {
            return Err(JobError::TooMany {
                what: "skills",
                max: MAX_SKILLS,
            });
        }
        SKILL.check(Some(skill))?;
    }
    Ok(())
}

/// The limit of a job name.
pub fn check_name(name: &str) -> Result<(), JobError> {
    NAME.check(Some(name))
}

/// The limit of a prompt.
pub fn check_prompt(prompt: &str) -> Result<(), JobError> {
    PROMPT.check(Some(prompt))
}

/// Name, then prompt (Python Hermes' order), then the rest.
pub fn check_new(new: &NewJob) -> Result<(), JobError> {
    NAME.check(new.name.as_deref())?;
    PROMPT.check(Some(&new.prompt))?;
    SCHEDULE.check(Some(&new.schedule))?;
    DELIVER.check(new.deliver.as_deref())?;
    check_skills(&new.skills)?;
    for (limit, value) in [
        (&REPEAT, &new.repeat),
        (&SCRIPT, &new.script),
        (&WORKDIR, &new.workdir),
        (&MODEL, &new.model),
        (&PROVIDER, &new.provider),
        (&TIMEZONE, &new.timezone),
        (&ORIGIN, &new.origin),
        (&REASON, &new.paused_reason),
        (&FAILURE_DELIVER, &new.failure_deliver),
        (&MONITOR_SCRIPT, &new.monitor_script),
        (&MONITOR_URL, &new.monitor_url),
        (&REASONING_EFFORT, &new.reasoning_effort),
        (&INTERPRETER, &new.interpreter),
        (&AFTER, &new.after),
        (&AFTER_ON, &new.after_on),
    ] {
        limit.check(value.as_deref())?;
    }
    Ok(())
}

/// The same limits on what an edit sets.
pub fn check_edit(edit: &JobEdit) -> Result<(), JobError> {
    NAME.check(edit.name.as_deref())?;
    PROMPT.check(edit.prompt.as_deref())?;
    SCHEDULE.check(edit.schedule.as_deref())?;
    DELIVER.check(edit.deliver.as_deref())?;
    check_skills(edit.skills.iter().flatten())?;
    check_skills(&edit.add_skills)?;
    for (limit, value) in [
        (&REPEAT, &edit.repeat),
        (&SCRIPT, &edit.script),
        (&WORKDIR, &edit.workdir),
        (&MODEL, &edit.model),
        (&PROVIDER, &edit.provider),
        (&TIMEZONE, &edit.timezone),
        (&FAILURE_DELIVER, &edit.failure_deliver),
        (&MONITOR_SCRIPT, &edit.monitor_script),
        (&MONITOR_URL, &edit.monitor_url),
        (&REASONING_EFFORT, &edit.reasoning_effort),
        (&INTERPRETER, &edit.interpreter),
        (&AFTER, &edit.after),
        (&AFTER_ON, &edit.after_on),
    ] {
        limit.check(value.as_deref())?;
    }
    Ok(())
}

/// The limit of a schedule given alone (a re-arm time).
pub fn check_schedule(schedule: &str) -> Result<(), JobError> {
    SCHEDULE.check(Some(schedule))
}

/// The limit of `redeliver --to`.
pub fn check_redeliver_to(to: &str) -> Result<(), JobError> {
    REDELIVER_TO.check(Some(to))
}

/// The limit of a pause reason.
pub fn check_reason(reason: Option<&str>) -> Result<(), JobError> {
    REASON.check(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_at_the_limit_passes_and_one_past_it_is_refused_with_its_field() {
        let at = "é".repeat(MAX_NAME_CHARS);
        let past = format!("{at}x");
        let new = |name: &str| NewJob {
            name: Some(name.to_string()),
            ..NewJob::default()
        };
        assert!(check_new(&new(&at)).is_ok());
        let refused = check_new(&new(&past)).unwrap_err();
        assert_eq!(refused.to_string(), "Name must be ≤ 200 characters");
    }

    #[test]
    fn name_is_measured_before_prompt_as_in_python_hermes() {
        let new = NewJob {
            name: Some("n".repeat(MAX_NAME_CHARS + 1)),
            prompt: "p".repeat(MAX_PROMPT_CHARS + 1),
            ..NewJob::default()
        };
        assert!(check_new(&new).unwrap_err().to_string().starts_with("Name"));
    }

    #[test]
    fn too_many_skills_are_refused_on_create_and_on_every_way_an_edit_sets_them() {
        let many: Vec<String> = (0..=MAX_SKILLS).map(|i| format!("s{i}")).collect();
        let message = "A job may load at most 50 skills";
        let new = NewJob {
            skills: many.clone(),
            ..NewJob::default()
        };
        assert!(check_new(&new)
            .unwrap_err()
            .to_string()
            .starts_with(message));
        for edit in [
            JobEdit {
                skills: Some(many.clone()),
                ..JobEdit::default()
            },
            JobEdit {
                add_skills: many.clone(),
                ..JobEdit::default()
            },
        ] {
            assert!(check_edit(&edit)
                .unwrap_err()
                .to_string()
                .starts_with(message));
        }
    }

    #[test]
    fn a_one_line_field_refuses_control_characters_and_a_prompt_keeps_its_lines() {
        let new = NewJob {
            deliver: Some("email:a@b.c\r\nBcc: x@evil.example".into()),
            prompt: "line one\n\tline two".into(),
            ..NewJob::default()
        };
        assert_eq!(
            check_new(&new).unwrap_err().to_string(),
            "Deliver must not contain control characters (found U+000D): give it on one line"
        );
        let name = JobEdit {
            name: Some("\u{1b}[31mred".into()),
            ..JobEdit::default()
        };
        assert!(check_edit(&name)
            .unwrap_err()
            .to_string()
            .contains("U+001B"));
        let prompt = NewJob {
            prompt: "line one\n\tline two".into(),
            ..NewJob::default()
        };
        assert!(check_new(&prompt).is_ok());
    }

    #[test]
    fn an_edit_that_sets_nothing_long_passes() {
        assert!(check_edit(&JobEdit::default()).is_ok());
        let edit = JobEdit {
            deliver: Some("x".repeat(MAX_DELIVER_CHARS + 1)),
            ..JobEdit::default()
        };
        assert_eq!(
            check_edit(&edit).unwrap_err().to_string(),
            "Deliver must be ≤ 1000 characters"
        );
    }
}
