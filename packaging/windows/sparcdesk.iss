; Inno Setup script: dist\sparcdesk\ -> dist\sparcdesk-VERSION-windows-x64-setup.exe
; (packaging/windows/make_installer.sh passes /DVERSION=... /DROOT=...)
#ifndef VERSION
  #define VERSION "0.0.0"
#endif
#ifndef ROOT
  #define ROOT "..\.."
#endif

[Setup]
AppId={{6F0C2A4E-5B7D-4C1E-9A51-2F3D8E7B9C10}
AppName=sparcdesk
AppVersion={#VERSION}
AppPublisher=sparcdesk
DefaultDirName={autopf}\sparcdesk
DefaultGroupName=sparcdesk
; per-user by default (no administrator rights needed); the user may choose all users
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#ROOT}\dist
OutputBaseFilename=sparcdesk-{#VERSION}-windows-x64-setup
SetupIconFile={#ROOT}\build\icons\sparcdesk.ico
UninstallDisplayIcon={app}\sparcdesk.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
DisableProgramGroupPage=yes

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#ROOT}\dist\sparcdesk\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\sparcdesk"; Filename: "{app}\sparcdesk.exe"
Name: "{autodesktop}\sparcdesk"; Filename: "{app}\sparcdesk.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\sparcdesk.exe"; Description: "{cm:LaunchProgram,sparcdesk}"; Flags: nowait postinstall skipifsilent
