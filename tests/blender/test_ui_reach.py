"""Every operator the add-on registers has a panel button or a menu entry, and every panel and menu draws.

How the UI is drawn headless: Blender as a Python module runs in background mode and draws no UI, so no
real UILayout can be had (bpy 5.0.1 and 4.2.23: `wm.redraw_timer` fails its poll, "context is
incorrect"; `wm.call_menu` and `WindowManager.popup_menu` end the process with a segmentation fault).
Each panel's and menu's own `draw` runs instead with a `Layout` recorder as `self.layout`. The recorder
keeps every operator() (and operator_enum / operator_menu_enum) call as an entry, and checks each call
against the real API as Blender would: the layout method exists on bpy.types.UILayout, the operator is
registered, a property set on its button is one of the operator's, a prop() / prop_search() /
template_list() names a property its data has. menu() / menu_contents() / popover() draw the named menu
or panel of the add-on in place, template_list() draws every item through its UIList's draw_item.
Polls are respected: a panel is drawn only where its poll and its parents' polls pass (sub-panels under
their parent), a menu only where its poll passes, and the contexts below are built so that each panel
shows and each conditional button is reached.

Nothing is listed by hand: the classes drawn and the operators looked for are the ones the add-on
registers (bpy.types before and after register()), and the menus it extends are found by the draw
functions it appends to Blender's menus and panels (their `draw._draw_funcs`, Blender's append list).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import bpy
import pytest

import addon
from addon.bridge import vehicle_rig
from addon.solver.presets import list_presets
from tests.blender.scenes import chain_armature, new_scene

UI_TYPES = (bpy.types.Panel, bpy.types.Menu, bpy.types.Header)
UILAYOUT = bpy.types.UILayout.bl_rna
# Layout methods that nest a sub-layout, and those that nest a header and a body; the others draw an item.
SUB_LAYOUTS = {"row", "column", "box", "split", "column_flow", "grid_flow"}
HEADER_AND_BODY = {"panel", "panel_prop"}


@dataclass
class Registration:
    """What addon.register() added: its classes by identifier and the draw functions it appended."""

    classes: dict[str, type]
    appended: list[tuple[type, Callable]]

    def of(self, kind: type) -> dict[str, type]:
        return {name: cls for name, cls in self.classes.items() if issubclass(cls, kind)}

    @property
    def operators(self) -> dict[str, type]:
        return {cls.bl_idname: cls for cls in self.of(bpy.types.Operator).values()}


def _appended_functions() -> dict[type, list[Callable]]:
    found = {}
    for name in dir(bpy.types):
        cls = getattr(bpy.types, name)
        if isinstance(cls, type) and issubclass(cls, UI_TYPES):
            found[cls] = list(getattr(cls.draw, "_draw_funcs", ())) if hasattr(cls, "draw") else []
    return found


@pytest.fixture(scope="module")
def registration() -> Iterator[Registration]:
    assert not hasattr(bpy.types.Scene, "symplex"), "add-on left registered by an earlier test module"
    names, appended = set(dir(bpy.types)), _appended_functions()
    addon.register()
    try:
        classes = {name: getattr(bpy.types, name) for name in sorted(set(dir(bpy.types)) - names)}
        added = [(cls, func) for cls, funcs in _appended_functions().items()
                 for func in funcs if func not in appended.get(cls, [])]
        yield Registration(classes, added)
    finally:
        addon.unregister()


@dataclass
class Drawing:
    """Everything drawn in one context: operator entries (idname -> where) and the panels and menus drawn."""

    registration: Registration
    context_name: str
    entries: dict[str, list[str]] = field(default_factory=dict)
    drawn: set[str] = field(default_factory=set)

    def draw(self, cls: type, where: str, draw: Callable | None = None) -> None:
        """Run `draw` (default: the class's own draw, and draw_header for a panel) into a recorder."""
        self.drawn.add(_idname(cls))
        owner = _Self(cls, Layout(self, where))
        if draw is not None:
            draw(owner, bpy.context)
            return
        if issubclass(cls, bpy.types.Panel) and hasattr(cls, "draw_header"):
            cls.draw_header(_Self(cls, Layout(self, f"{where} header")), bpy.context)
        cls.draw(owner, bpy.context)

    def draw_named(self, kind: type, name: str, where: str) -> None:
        """A menu or panel drawn in place by menu() / popover(): the add-on's own, where its poll passes."""
        cls = getattr(bpy.types, name, None)
        assert isinstance(cls, type) and issubclass(cls, kind), f"{where}: no registered {kind.__name__} {name!r}"
        if name in self.registration.classes and _polls(cls):
            self.draw(cls, f"{where} > {name}")


class _Self:
    """Stands for the Panel / Menu / UIList instance Blender passes as `self`: its layout, then its class."""

    def __init__(self, cls: type, layout: Layout | None):
        self.layout = layout
        self._cls = cls

    def __getattr__(self, name: str):
        return getattr(self._cls, name)


def _idname(cls: type) -> str:
    return getattr(cls, "bl_idname", "") or cls.__name__


def _polls(cls: type) -> bool:
    return not hasattr(cls, "poll") or bool(cls.poll(bpy.context))


def _check_property(data, name: str, where: str) -> None:
    assert name in data.bl_rna.properties, f"{where}: {data.bl_rna.identifier} has no property {name!r}"


class _ButtonProperties:
    """What layout.operator() returns: the button's operator properties, which must exist on the operator."""

    def __init__(self, idname: str, where: str):
        category, name = idname.split(".")
        try:
            rna = getattr(getattr(bpy.ops, category), name).get_rna_type()
        except KeyError:
            raise AssertionError(f"{where}: button for {idname!r}, which is not a registered operator") from None
        object.__setattr__(self, "_rna", rna)
        object.__setattr__(self, "_where", f"{where}: button {idname}")

    def __setattr__(self, name: str, value) -> None:
        assert name in self._rna.properties, f"{self._where} sets {name!r}, which the operator does not have"


class Layout:
    """Records what a draw function puts in its layout; see the module docstring."""

    def __init__(self, drawing: Drawing, where: str):
        object.__setattr__(self, "_drawing", drawing)
        object.__setattr__(self, "_where", where)

    def __setattr__(self, name: str, value) -> None:  # use_property_split, active, scale_y, ...
        assert name in UILAYOUT.properties, f"{self._where}: UILayout has no attribute {name!r}"

    def __getattr__(self, name: str):
        def call(*args, **kwargs):
            self._check_call(name, args, kwargs)
            if name in SUB_LAYOUTS:
                return Layout(self._drawing, self._where)
            if name in HEADER_AND_BODY:
                return Layout(self._drawing, self._where), Layout(self._drawing, self._where)
            return None  # label, separator, progress, ...: no operator, no property

        return call

    def _check_call(self, name: str, args: tuple, kwargs: dict) -> None:
        """The call matches UILayout's own function of that name in this Blender (name, arity, keywords)."""
        assert name in UILAYOUT.functions, f"{self._where}: UILayout has no method {name!r}"
        params = [p.identifier for p in UILAYOUT.functions[name].parameters if not p.is_output]
        unknown = set(kwargs) - set(params)
        assert len(args) <= len(params) and not unknown, \
            f"{self._where}: UILayout.{name}() has no argument(s) {sorted(unknown)} (takes {params})"

    def operator(self, idname: str, **kwargs) -> _ButtonProperties:
        self._check_call("operator", (idname,), kwargs)
        self._drawing.entries.setdefault(idname, []).append(self._where)
        return _ButtonProperties(idname, self._where)

    def operator_enum(self, idname: str, property: str, **kwargs) -> None:
        self._check_call("operator_enum", (idname, property), kwargs)
        setattr(self.operator(idname), property, None)

    def operator_menu_enum(self, idname: str, property: str, **kwargs) -> None:
        self._check_call("operator_menu_enum", (idname, property), kwargs)
        setattr(self.operator(idname), property, None)

    def menu(self, menu: str, **kwargs) -> None:
        self._check_call("menu", (menu,), kwargs)
        self._drawing.draw_named(bpy.types.Menu, menu, self._where)

    def menu_contents(self, menu: str) -> None:
        self._drawing.draw_named(bpy.types.Menu, menu, self._where)

    def popover(self, panel: str, **kwargs) -> None:
        self._check_call("popover", (panel,), kwargs)
        self._drawing.draw_named(bpy.types.Panel, panel, self._where)

    def prop(self, data, property: str, **kwargs) -> None:
        self._check_call("prop", (data, property), kwargs)
        _check_property(data, property, self._where)

    def prop_search(self, data, property: str, search_data, search_property: str, **kwargs) -> None:
        self._check_call("prop_search", (data, property, search_data, search_property), kwargs)
        _check_property(data, property, self._where)
        _check_property(search_data, search_property, self._where)

    def template_list(self, listtype_name: str, list_id: str, dataptr, propname: str, active_dataptr,
                      active_propname: str, **kwargs) -> None:
        self._check_call("template_list", (listtype_name, list_id, dataptr, propname, active_dataptr,
                                           active_propname), kwargs)
        _check_property(dataptr, propname, self._where)
        _check_property(active_dataptr, active_propname, self._where)
        ui_list = getattr(bpy.types, listtype_name, None)
        assert ui_list is not None, f"{self._where}: UIList {listtype_name!r} is not registered"
        where = f"{self._where} > {listtype_name}"
        for index, item in enumerate(getattr(dataptr, propname)):
            ui_list.draw_item(_Self(ui_list, None), bpy.context, Layout(self._drawing, f"{where}[{index}]"), dataptr,
                              item, 0, active_dataptr, active_propname, index)


def _ancestors_poll(cls: type, panels: dict[str, type]) -> bool:
    while cls is not None:
        if not _polls(cls):
            return False
        parent = getattr(cls, "bl_parent_id", "")
        cls = panels.get(parent) or (getattr(bpy.types, parent, None) if parent else None)
    return True


def draw_everything(registration: Registration, context_name: str) -> Drawing:
    """Draw, in the current context, every panel of the add-on that shows there, its menus (reached through
    menu() calls) and the draw functions it appended to Blender's menus and panels."""
    drawing = Drawing(registration, context_name)
    panels = registration.of(bpy.types.Panel)
    for name, cls in panels.items():
        if _ancestors_poll(cls, panels):
            drawing.draw(cls, f"{_path(cls, panels)} [{context_name}]")
    for owner, func in registration.appended:
        if _polls(owner):
            drawing.draw(owner, f"{owner.__name__} (appended {func.__name__}) [{context_name}]", func)
    return drawing


def _path(cls: type, panels: dict[str, type]) -> str:
    parent = getattr(cls, "bl_parent_id", "")
    return f"{_path(panels[parent], panels)} > {_idname(cls)}" if parent in panels else _idname(cls)


# ----------------------------------------------------------------------------------------------
# Contexts where each panel shows


def _empty_scene() -> dict:
    return dict(scene=new_scene("reach_empty"), active_object=None, object=None)


def _armature_setup() -> dict:
    """A chain with its setup, a loop and a finished bake's diagnostics; its last bone the active (pose) bone."""
    scene = new_scene("reach_armature")
    arm, setup = chain_armature(scene, n=2)
    loop = arm.data.symplex.loops.add()
    loop.name, loop.bone_a, loop.target, loop.bone_b = "closure", "b0", "BONE", "b1"
    setup.diagnostics.status = "finished"
    pose_bone = arm.pose.bones["b1"]
    return dict(scene=scene, active_object=arm, object=arm, active_pose_bone=pose_bone, bone=pose_bone.bone)


def _rigid_bodies(active: str) -> Callable[[], dict]:
    """A double pendulum of rigid bodies (its setup active), with a body or a joint's constraint empty active."""

    def build() -> dict:
        scene = new_scene(f"reach_rigid_{active}")
        with bpy.context.temp_override(scene=scene):
            assert bpy.ops.symplex.add_preset(preset="double_pendulum", variant="RIGID_BODIES") == {"FINISHED"}
        setup = scene.symplex.setups[scene.symplex.active_setup]
        obj = setup.root if active == "body" else next(o for o in setup.collection.objects
                                                       if o.rigid_body_constraint is not None)
        return dict(scene=scene, active_object=obj, object=obj)

    return build


def _vehicle_rig() -> dict:
    """A car rig from Add Vehicle Rig, its chassis active."""
    scene = new_scene("reach_vehicle")
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.add_vehicle() == {"FINISHED"}
    chassis = next(o for o in scene.objects if vehicle_rig.PRESET_PROPERTY in o)
    return dict(scene=scene, active_object=chassis, object=chassis)


CONTEXTS = {
    "empty scene": _empty_scene,
    "armature setup, bone active": _armature_setup,
    "rigid bodies, body active": _rigid_bodies("body"),
    "rigid bodies, constraint active": _rigid_bodies("constraint"),
    "vehicle rig, chassis active": _vehicle_rig,
}


@pytest.fixture(scope="module")
def drawings(registration) -> list[Drawing]:
    out = []
    for name, build in CONTEXTS.items():
        override = build()
        with bpy.context.temp_override(**override):
            out.append(draw_everything(registration, name))
    return out


def test_every_registered_operator_has_a_panel_button_or_menu_entry(registration, drawings):
    operators = registration.operators
    assert operators and set(operators) >= {f"symplex.{name}" for name in dir(bpy.ops.symplex)}
    reached = {idname for drawing in drawings for idname in drawing.entries}
    missing = sorted(set(operators) - reached)
    assert not missing, (
        f"{len(missing)} of the {len(operators)} registered operators have no panel button or menu entry: "
        + ", ".join(f"{idname} ({operators[idname].bl_label})" for idname in missing))


def test_every_panel_and_menu_of_the_add_on_shows_somewhere(registration, drawings):
    """Each panel's and menu's poll passes in one of the contexts above, so its buttons were looked at."""
    drawn = set().union(*(drawing.drawn for drawing in drawings))
    ui = {_idname(cls) for cls in registration.of(bpy.types.Panel).values()}
    ui |= {_idname(cls) for cls in registration.of(bpy.types.Menu).values()}
    assert registration.appended, "the add-on appends nothing to Blender's menus (Add > Symplex Preset)"
    assert not ui - drawn, f"never drawn in any context here: {sorted(ui - drawn)}"


def test_buttons_reach_what_they_should(drawings):
    """The add menu reaches every preset through Add > Symplex Preset; list operators sit by their lists."""
    by_context = {drawing.context_name: drawing.entries for drawing in drawings}
    empty = by_context["empty scene"]
    in_add_menu = [where for where in empty["symplex.add_preset"]
                   if where.startswith("VIEW3D_MT_add (appended") and where.endswith("> SYMPLEX_MT_add_preset")]
    assert len(in_add_menu) == len(list_presets())
    assert "symplex.bake" not in empty  # no setup, no Bake button
    armature = by_context["armature setup, bone active"]
    assert {"symplex.validate", "symplex.bake", "symplex.free_bake", "symplex.loop_add",
            "symplex.loop_remove"} <= set(armature)
