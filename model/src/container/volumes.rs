//! The volumes a container mounts, set up as the kubelet sets them up.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    MountSpec, PodContext, SERVICE_ACCOUNT_PATH, SERVICE_ACCOUNT_VOLUME, StartError, Volume,
    field_value, items, optional, resource_value, text,
};

/// The container's mounts and the content of each volume they name.
pub(super) fn mounts(
    pod_spec: &Value,
    container: &Value,
    ctx: &PodContext,
) -> Result<(Vec<MountSpec>, BTreeMap<String, Volume>), StartError> {
    let declared: BTreeMap<&str, &Value> = items(pod_spec, "volumes")
        .iter()
        .map(|v| (text(v, "name"), v))
        .collect();
    let mut mounts = Vec::new();
    let mut volumes = BTreeMap::new();
    for mount in items(container, "volumeMounts") {
        let name = text(mount, "name");
        let volume = declared.get(name).ok_or_else(|| {
            StartError::Spec(format!(
                "container {:?} mounts volume {name:?}, which the pod does not declare",
                text(container, "name")
            ))
        })?;
        if !volumes.contains_key(name) {
            volumes.insert(name.to_owned(), content(pod_spec, container, volume, ctx)?);
        }
        mounts.push(MountSpec {
            volume: name.to_owned(),
            path: text(mount, "mountPath").to_owned(),
            sub_path: text(mount, "subPath").to_owned(),
            read_only: mount.get("readOnly").and_then(Value::as_bool) == Some(true),
        });
    }
    let automount = pod_spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        != Some(false);
    let taken = mounts.iter().any(|m| m.path == SERVICE_ACCOUNT_PATH);
    if automount && !taken {
        volumes.insert(
            SERVICE_ACCOUNT_VOLUME.to_owned(),
            Volume::Files(token_files(ctx, "token")),
        );
        mounts.push(MountSpec {
            volume: SERVICE_ACCOUNT_VOLUME.to_owned(),
            path: SERVICE_ACCOUNT_PATH.to_owned(),
            sub_path: String::new(),
            read_only: true,
        });
    }
    Ok((mounts, volumes))
}

/// `token` (at `token_path`), `ca.crt` and `namespace`: the API server's token volume.
fn token_files(ctx: &PodContext, token_path: &str) -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([
        (token_path.to_owned(), ctx.token.clone().into_bytes()),
        ("ca.crt".to_owned(), ctx.ca_pem.clone().into_bytes()),
        ("namespace".to_owned(), ctx.namespace.clone().into_bytes()),
    ])
}

fn content(
    pod_spec: &Value,
    container: &Value,
    volume: &Value,
    ctx: &PodContext,
) -> Result<Volume, StartError> {
    let name = text(volume, "name");
    let failed = |message: String| StartError::Mount {
        volume: name.to_owned(),
        message,
    };
    if volume.get("emptyDir").is_some() {
        return Ok(Volume::EmptyDir);
    }
    let mut files = BTreeMap::new();
    if let Some(secret) = volume.get("secret") {
        object_files(secret, "secretName", Kind::Secret, ctx, &mut files).map_err(failed)?;
    } else if let Some(config_map) = volume.get("configMap") {
        object_files(config_map, "name", Kind::ConfigMap, ctx, &mut files).map_err(failed)?;
    } else if let Some(downward) = volume.get("downwardAPI") {
        downward_files(pod_spec, container, downward, ctx, &mut files).map_err(failed)?;
    } else if let Some(projected) = volume.get("projected") {
        for source in items(projected, "sources") {
            projected_files(pod_spec, container, source, ctx, &mut files).map_err(failed)?;
        }
    } else {
        let kind = volume
            .as_object()
            .and_then(|o| o.keys().find(|k| *k != "name"))
            .cloned()
            .unwrap_or_default();
        return Ok(Volume::Unsupported(kind));
    }
    Ok(Volume::Files(files))
}

#[derive(Clone, Copy)]
enum Kind {
    Secret,
    ConfigMap,
}

/// The files of a Secret or ConfigMap source (`items`, else every key).
fn object_files(
    source: &Value,
    name_key: &str,
    kind: Kind,
    ctx: &PodContext,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    let name = text(source, name_key);
    let (objects, words) = match kind {
        Kind::Secret => (&ctx.secrets, "secret"),
        Kind::ConfigMap => (&ctx.config_maps, "configmap"),
    };
    let Some(data) = objects.get(name) else {
        return match optional(source) {
            true => Ok(()),
            false => Err(format!("{words} \"{name}\" not found")),
        };
    };
    let listed = items(source, "items");
    if listed.is_empty() {
        files.extend(data.iter().map(|(k, v)| (k.clone(), v.clone())));
        return Ok(());
    }
    for item in listed {
        let key = text(item, "key");
        match data.get(key) {
            Some(bytes) => {
                files.insert(text(item, "path").to_owned(), bytes.clone());
            }
            None if optional(source) => {}
            None => {
                return Err(match kind {
                    Kind::Secret => format!("references non-existent secret key: {key}"),
                    Kind::ConfigMap => {
                        format!("configmap references non-existent config key: {key}")
                    }
                });
            }
        }
    }
    Ok(())
}

fn downward_files(
    pod_spec: &Value,
    container: &Value,
    downward: &Value,
    ctx: &PodContext,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    for item in items(downward, "items") {
        let value = if let Some(field) = item.get("fieldRef") {
            field_value(pod_spec, text(field, "fieldPath"), ctx)
        } else if let Some(resource) = item.get("resourceFieldRef") {
            resource_value(container, resource, ctx)
        } else {
            continue;
        };
        files.insert(
            text(item, "path").to_owned(),
            value.map_err(|e| e.to_string())?.into_bytes(),
        );
    }
    Ok(())
}

fn projected_files(
    pod_spec: &Value,
    container: &Value,
    source: &Value,
    ctx: &PodContext,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    if let Some(secret) = source.get("secret") {
        object_files(secret, "name", Kind::Secret, ctx, files)
    } else if let Some(config_map) = source.get("configMap") {
        object_files(config_map, "name", Kind::ConfigMap, ctx, files)
    } else if let Some(downward) = source.get("downwardAPI") {
        downward_files(pod_spec, container, downward, ctx, files)
    } else if let Some(token) = source.get("serviceAccountToken") {
        let path = Some(text(token, "path"))
            .filter(|p| !p.is_empty())
            .unwrap_or("token");
        files.insert(path.to_owned(), ctx.token.clone().into_bytes());
        Ok(())
    } else {
        Ok(())
    }
}
