"""Action API compatibility: the only module that knows legacy and slotted actions apart.

Blender 4.2/4.3 keep F-curves directly on the Action (``Action.fcurves``, ``Action.groups``).
Blender 4.4+ (and 5.x, where ``Action.fcurves`` is gone) use slotted, layered actions: an Action has
``slots``; its first layer's keyframe strip holds one channelbag per slot with the F-curves; an ID
plays the slot named by ``AnimData.action_slot``.

Everything else in Symplex talks about an `ActionChannels` (an action plus, on 4.4+, the slot of
one ID in it) and never touches these attributes itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy

SLOTTED: bool = "slots" in bpy.types.Action.bl_rna.properties
"""True on Blender 4.4+ (slotted actions), False on 4.2/4.3 (legacy Action.fcurves)."""


@dataclass(frozen=True)
class ActionChannels:
    """The F-curves one ID plays from `action`: the whole action (legacy) or one slot of it."""

    action: bpy.types.Action
    slot: object | None = None  # bpy.types.ActionSlot on 4.4+

    @property
    def slot_identifier(self) -> str:
        return self.slot.identifier if self.slot is not None else ""


def _channelbag(channels: ActionChannels, create: bool):
    """The channelbag of `channels.slot` in the action's first keyframe strip (4.4+ only)."""
    if channels.slot is None:
        if create:
            raise ValueError(f"action {channels.action.name!r}: no slot to write F-curves into")
        return None
    action = channels.action
    if not action.layers:
        if not create:
            return None
        action.layers.new("Layer")
    layer = action.layers[0]
    if not layer.strips:
        if not create:
            return None
        layer.strips.new(type="KEYFRAME")
    return layer.strips[0].channelbag(channels.slot, ensure=create)


def _fcurve_collection(channels: ActionChannels, create: bool):
    if not SLOTTED:
        return channels.action.fcurves
    bag = _channelbag(channels, create)
    return None if bag is None else bag.fcurves


def new_action(name: str, owner: bpy.types.ID) -> ActionChannels:
    """A new empty action for `owner` (with a slot for it on 4.4+); nothing is assigned yet."""
    action = bpy.data.actions.new(name)
    if not SLOTTED:
        action.id_root = owner.id_type
        return ActionChannels(action)
    slot = action.slots.new(id_type=owner.id_type, name=owner.name)
    channels = ActionChannels(action, slot)
    _channelbag(channels, create=True)
    return channels


def fcurves(channels: ActionChannels | None) -> list:
    """The F-curves of `channels` (an empty list for None or an empty slot)."""
    if channels is None:
        return []
    collection = _fcurve_collection(channels, create=False)
    return [] if collection is None else list(collection)


def new_fcurve(channels: ActionChannels, data_path: str, index: int, group: str = "") -> bpy.types.FCurve:
    """Create the F-curve (data_path, index) in `channels`, in group `group` when given."""
    collection = _fcurve_collection(channels, create=True)
    if not SLOTTED:
        return collection.new(data_path, index=index, action_group=group)
    fcurve = collection.new(data_path, index=index)
    if group:
        bag = _channelbag(channels, create=True)
        fcurve.group = bag.groups.get(group) or bag.groups.new(group)
    return fcurve


def find_fcurve(channels: ActionChannels | None, data_path: str, index: int) -> bpy.types.FCurve | None:
    collection = None if channels is None else _fcurve_collection(channels, create=False)
    return None if collection is None else collection.find(data_path, index=index)


def assigned(owner: bpy.types.ID) -> ActionChannels | None:
    """The action (and slot) `owner` currently plays, or None."""
    animation = owner.animation_data
    if animation is None or animation.action is None:
        return None
    if not SLOTTED:
        return ActionChannels(animation.action)
    return ActionChannels(animation.action, animation.action_slot)


def assign(owner: bpy.types.ID, channels: ActionChannels | None) -> None:
    """Make `owner` play `channels` (None: no action)."""
    if channels is None:
        if owner.animation_data is not None:
            owner.animation_data.action = None
        return
    animation = owner.animation_data or owner.animation_data_create()
    animation.action = channels.action
    if SLOTTED and channels.slot is not None:
        animation.action_slot = channels.slot


def slot_by_identifier(action: bpy.types.Action, identifier: str) -> ActionChannels:
    """`action` with the slot named `identifier` (legacy: the action itself).

    Without such a slot (a record written by Blender 4.2 and read by 4.4+, whose versioning turned the
    action into one "Legacy Slot"), the action's first slot.
    """
    if not SLOTTED:
        return ActionChannels(action)
    slots = list(action.slots)
    for slot in slots:
        if slot.identifier == identifier:
            return ActionChannels(action, slot)
    return ActionChannels(action, slots[0] if slots else None)


def remove_action(action: bpy.types.Action) -> None:
    bpy.data.actions.remove(action)
