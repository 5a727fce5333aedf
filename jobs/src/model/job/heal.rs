//! The repairs a record gets on every read: shapes older or other Hermes builds wrote,
//! rewritten so the record reads the same in any version.

use super::*;

impl Job {
    /// Rewrites wrongly shaped fields in place so the record reads the same in any
    /// Hermes version: a string schedule becomes its object, `schedule_display` follows
    /// it, `deliver` lists are joined, `repeat` becomes `{times, completed}`, `skill`
    /// mirrors `skills[0]`, a paused marker on an enabled record turns it off. Keys it
    /// does not own are never touched.
    pub fn heal(&mut self, ctx: &Context) {
        if self.text_field("id").is_none() {
            self.set("id", json!(new_id()));
        }
        self.heal_schedule(ctx);
        self.heal_shapes();
        self.heal_times_and_pause(ctx);
    }

    /// A string or display-less schedule becomes its object; `schedule_display` follows.
    fn heal_schedule(&mut self, ctx: &Context) {
        let needs_schedule_rewrite = match self.record.get("schedule") {
            Some(Value::Object(o)) => {
                o.get("display")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                    || !o.contains_key("kind")
            }
            Some(_) => true,
            None => false,
        };
        if needs_schedule_rewrite {
            if let Ok(schedule) = self.schedule(ctx) {
                let mut object = match self.record.get("schedule") {
                    Some(Value::Object(o)) => o.clone(),
                    _ => Map::new(),
                };
                if let Value::Object(fresh) = schedule.to_json() {
                    for (k, v) in fresh {
                        object.insert(k, v);
                    }
                }
                self.set("schedule", Value::Object(object));
            }
        }
        if let Some(display) = self
            .record
            .get("schedule")
            .and_then(|s| s.get("display"))
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            if self.text("schedule_display") != Some(display.as_str()) {
                self.set("schedule_display", json!(display));
            }
        }
    }

    /// `deliver` lists joined, `repeat` as `{times, completed}`, `skill` mirroring `skills[0]`.
    fn heal_shapes(&mut self) {
        if matches!(self.record.get("deliver"), Some(Value::Array(_))) {
            let joined = self.deliver();
            self.set("deliver", json!(joined));
        }
        let repeat_ok = matches!(self.record.get("repeat"), Some(Value::Object(o))
            if o.get("completed").is_some_and(Value::is_u64)
            && o.get("times").is_some_and(|t| t.is_null() || t.as_u64().is_some_and(|n| n > 0)));
        if self.record.contains_key("repeat") && !repeat_ok {
            let repeat = self.repeat();
            let mut object = match self.record.get("repeat") {
                Some(Value::Object(o)) => o.clone(),
                _ => Map::new(),
            };
            object.insert("times".into(), json!(repeat.times));
            object.insert("completed".into(), json!(repeat.completed));
            self.set("repeat", Value::Object(object));
        }
        if self.record.contains_key("skills") || self.record.contains_key("skill") {
            let skills = self.skills();
            let first = skills.first().cloned();
            if self.record.get("skills") != Some(&json!(skills)) {
                self.set("skills", json!(skills));
            }
            if self.record.get("skill") != Some(&json!(first)) {
                self.set("skill", json!(first));
            }
        }
    }

    /// Instants with an explicit offset, a next run for a runnable recurring job, and a
    /// paused marker that wins over `enabled: true`.
    fn heal_times_and_pause(&mut self, ctx: &Context) {
        // Every stored instant carries an explicit offset: legacy naive ones are rewritten.
        for key in ["created_at", "next_run_at", "last_run_at", "paused_at"] {
            let Some(text) = self.text_field(key) else {
                continue;
            };
            if !schedules::has_explicit_offset(text) {
                if let Some(instant) = parse_stored_instant(text, ctx.legacy_zone) {
                    let zone = self.zone(ctx);
                    self.set(key, json!(format_instant(instant, zone)));
                }
            }
        }
        // A runnable recurring job without a next run gets one (never fired by this).
        if self.state() == JobState::Scheduled && self.text_field("next_run_at").is_none() {
            if let Ok(schedule) = self.schedule(ctx) {
                let repeat = self.repeat();
                let used_up = repeat.times.is_some_and(|t| repeat.completed >= t);
                if schedule.is_recurring() && !used_up {
                    let zone = self.zone(ctx);
                    let next = self.planned_next(&schedule, ctx.now, self.last_run_at(ctx), ctx);
                    if let schedules::Planned::At(next) = next {
                        self.set("next_run_at", json!(format_instant(next, zone)));
                    }
                }
            }
        }
        if self.flag("enabled") == Some(true) && self.has_pause_marker() {
            self.set("enabled", json!(false));
            if self.text("state") != Some("paused") {
                self.set("state", json!("paused"));
            }
        }
    }
}
